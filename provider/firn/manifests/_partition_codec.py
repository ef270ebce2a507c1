"""Partition tuples <-> Avro ``r102`` records.

Firn's internal values (``firn.spec.values``: date = days, time/timestamps = µs or ns ints,
``Decimal``, ``uuid.UUID``, ``bytes``) map onto Avro's physical types directly, except for
decimals and uuids, which Appendix A stores as ``fixed``. On read, fastavro turns logical types
into ``datetime.date``/``time``/``datetime``/``Decimal``/``UUID`` objects (but not
``timestamp-nanos`` or fixed ``uuid``, which it does not know); these are converted back here.
Conversions are chosen once per (file schema, partition type), never per value type check.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from firn.errors import ValidationError
from firn.manifests._avro_io import named_types, non_null_branch
from firn.manifests.avro_schemas import avro_name, decimal_required_bytes
from firn.spec import values
from firn.spec.types import DecimalType, IcebergType, StructType, UUIDType

Converter = Callable[[Any], Any]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_ONE_US = datetime.timedelta(microseconds=1)


# -- write side ---------------------------------------------------------------------------------
def unscaled_decimal(value: Any, t: DecimalType) -> int:
    """The exact unscaled integer of ``value`` at ``t``'s scale (no context rounding).

    Raises ``ValidationError`` if the value needs more fractional digits than the scale or more
    digits than the precision — Avro's fixed size is sized for the precision (Appendix A).
    """
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(value)
    sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):
        raise ValidationError(f"decimal partition value {value} is not finite")
    unscaled = int("".join(map(str, digits))) if digits else 0
    shift = exponent + t.scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        unscaled, rest = divmod(unscaled, 10**-shift)
        if rest:
            raise ValidationError(
                f"decimal partition value {value} has more than {t.scale} fractional digits for {t}"
            )
    if unscaled >= 10**t.precision:
        raise ValidationError(f"decimal partition value {value} does not fit {t}")
    return -unscaled if sign else unscaled


def _decimal_encoder(t: DecimalType) -> Converter:
    size = decimal_required_bytes(t.precision)

    def encode(v: Any) -> Any:
        if v is None:
            return None
        return unscaled_decimal(v, t).to_bytes(size, "big", signed=True)

    return encode


def _uuid_encode(v: Any) -> Any:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, uuid.UUID):
        return v.bytes
    raise ValidationError(f"uuid partition value must be uuid.UUID, got {type(v).__name__}")


class PartitionEncoder:
    """Builds the ``r102`` record dict of a partition tuple for one partition type."""

    __slots__ = ("_encoders", "_names", "_simple", "width")

    def __init__(self, partition_type: StructType) -> None:
        self._names = [avro_name(f.name) for f in partition_type.fields]
        encoders: list[Converter | None] = []
        for f in partition_type.fields:
            if isinstance(f.field_type, DecimalType):
                encoders.append(_decimal_encoder(f.field_type))
            elif isinstance(f.field_type, UUIDType):
                encoders.append(_uuid_encode)
            else:
                encoders.append(None)
        self._encoders = encoders
        self._simple = all(e is None for e in encoders)
        self.width = len(self._names)

    def encode(self, partition: Sequence[Any]) -> dict[str, Any]:
        if len(partition) != self.width:
            raise ValidationError(
                f"partition tuple {tuple(partition)!r} has {len(partition)} values; the spec has {self.width} fields"
            )
        if self._simple:
            return dict(zip(self._names, partition))
        return {n: (v if e is None else e(v)) for n, e, v in zip(self._names, self._encoders, partition)}


# -- read side ----------------------------------------------------------------------------------
def _date_to_days(v: Any) -> Any:
    return v.toordinal() - _EPOCH_ORDINAL if isinstance(v, datetime.date) else v


def _time_to_micros(v: Any) -> Any:
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return v


def _datetime_to_micros(v: Any) -> Any:
    if isinstance(v, datetime.datetime):
        return (v - (_EPOCH if v.tzinfo is not None else _EPOCH_NAIVE)) // _ONE_US
    return v


def _millis_to_micros(v: Any) -> Any:
    if isinstance(v, datetime.datetime | datetime.time):
        return _datetime_to_micros(v) if isinstance(v, datetime.datetime) else _time_to_micros(v)
    return None if v is None else v * 1000


def _bytes_to_uuid(v: Any) -> Any:
    return uuid.UUID(bytes=bytes(v)) if isinstance(v, bytes | bytearray) else v


def _decimal_decoder(scale: int) -> Converter:
    def decode(v: Any) -> Any:
        if isinstance(v, bytes | bytearray):
            return values.decimal_from_unscaled(int.from_bytes(v, "big", signed=True), scale)
        return v

    return decode


def _converter(
    avro_type: Any, iceberg_type: IcebergType | None, named: Mapping[str, Any]
) -> Converter | None:
    """How to turn what fastavro returns for ``avro_type`` into Firn's internal value."""
    t = non_null_branch(avro_type)
    if isinstance(t, str):
        t = named.get(t, t)
    logical = t.get("logicalType") if isinstance(t, Mapping) else None
    if logical == "date":
        return _date_to_days
    if logical == "time-micros":
        return _time_to_micros
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return _datetime_to_micros
    if logical in ("time-millis", "timestamp-millis", "local-timestamp-millis"):
        return _millis_to_micros
    if logical == "uuid" or isinstance(iceberg_type, UUIDType):
        return _bytes_to_uuid  # fixed(16) uuid: fastavro returns bytes; string uuid: already UUID
    if logical != "decimal" and isinstance(iceberg_type, DecimalType):
        return _decimal_decoder(iceberg_type.scale)  # a fixed/bytes decimal without the logical type
    return None  # decimals (fastavro builds Decimal at the written scale), ints, strings, bytes


class PartitionDecoder:
    """Turns a file's ``r102`` record dict into a partition tuple of internal values.

    With a ``partition_type`` the tuple follows its field order (matched by field id; a field
    the file lacks reads as null). Without one, it follows the file's field order.
    """

    __slots__ = ("_getter", "_plan")

    def __init__(
        self,
        partition_record: Mapping[str, Any],
        partition_type: StructType | None,
        whole_schema: Any,
    ) -> None:
        named = named_types(whole_schema)
        by_id: dict[int, Mapping[str, Any]] = {}
        in_order: list[Mapping[str, Any]] = []
        for f in partition_record.get("fields", ()):
            in_order.append(f)
            if f.get("field-id") is not None:
                by_id[int(f["field-id"])] = f
        plan: list[tuple[str | None, Converter | None]] = []
        if partition_type is None:
            for f in in_order:
                plan.append((str(f["name"]), _converter(f["type"], None, named)))
        else:
            for pf in partition_type.fields:
                f = by_id.get(pf.field_id)
                if f is None:
                    plan.append((None, None))
                else:
                    plan.append((str(f["name"]), _converter(f["type"], pf.field_type, named)))
        self._plan = plan

        self._getter: Callable[[Mapping[Any, Any]], tuple[Any, ...]]
        if all(c is None and n is not None for n, c in plan):
            names = [n for n, _ in plan]
            if not names:
                self._getter = lambda rec: ()
            else:
                # The common case (no conversions, every field present) skips per-value checks.
                self._getter = lambda rec: tuple([rec[n] for n in names])
        else:
            self._getter = self._convert

    def _convert(self, rec: Mapping[Any, Any]) -> tuple[Any, ...]:
        out = []
        for name, conv in self._plan:
            v = None if name is None else rec.get(name)
            out.append(v if conv is None or v is None else conv(v))
        return tuple(out)

    def decode(self, rec: Mapping[Any, Any]) -> tuple[Any, ...]:
        return self._getter(rec)


__all__ = ["PartitionDecoder", "PartitionEncoder"]
