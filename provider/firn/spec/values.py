"""Single-value serialization (spec Appendix D) and Firn's internal value representation.

Internal representation of values of each type (used in partition tuples, bounds, defaults,
literals after binding):

    boolean -> bool            int, long -> int           float, double -> float
    decimal -> decimal.Decimal date -> int (days since 1970-01-01)
    time -> int (µs since midnight)                       timestamp, timestamptz -> int (µs since epoch, UTC)
    timestamp_ns, timestamptz_ns -> int (ns since epoch)   string -> str
    uuid -> uuid.UUID          fixed, binary -> bytes     unknown -> None
    struct -> dict[int, Any] keyed by field id            list -> list   map -> dict

A ``float`` value always holds a number that is exactly representable as a 32-bit float, and a
``decimal`` value always has exactly the column's scale, so equal values compare and hash equal.

The binary and JSON forms follow Appendix D. Binary decoding infers the written type from the
length, because type promotion (spec "Schema Evolution") leaves old bounds in place: a
``long`` column may hold 4-byte ``int`` bounds, a ``double`` column 4-byte ``float`` bounds and a
``timestamp``/``timestamp_ns`` column 4-byte ``date`` bounds. JSON text mirrors Iceberg Java's
``SingleValueParser`` so metadata written by either library reads the same in the other.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from firn.errors import InvalidMetadata, Unsupported, ValidationError
from firn.spec import datetimes as dts
from firn.spec.murmur3 import decimal_unscaled, min_twos_complement
from firn.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    check_supported_for_values,
)

_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# Types stored as an 8-byte little-endian long (Appendix D).
_LONG_TYPES = (LongType, TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_MICROS_TS = (TimestampType, TimestamptzType)
_NANOS_TS = (TimestampNanoType, TimestamptzNanoType)
_ALL_TS = (*_MICROS_TS, *_NANOS_TS)
_UTC_TS = (TimestamptzType, TimestamptzNanoType)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    """The decimal ``unscaled * 10**-scale``, built exactly (no context rounding at 38 digits)."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def round_to_float32(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float (raises ``OverflowError`` if too large)."""
    return float(_FLOAT.unpack(_FLOAT.pack(value))[0])


# --- Appendix D binary ---------------------------------------------------------------------


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """Appendix D binary form of an internal value."""
    try:
        if isinstance(t, BooleanType):
            return b"\x01" if value else b"\x00"
        if isinstance(t, IntegerType | DateType):
            return _INT.pack(value)
        if isinstance(t, _LONG_TYPES):
            return _LONG.pack(value)
        if isinstance(t, FloatType):
            return _FLOAT.pack(value)
        if isinstance(t, DoubleType):
            return _DOUBLE.pack(value)
        if isinstance(t, StringType):
            return str(value).encode("utf-8")
        if isinstance(t, UUIDType):
            return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)).bytes
        if isinstance(t, FixedType | BinaryType):
            return bytes(value)
        if isinstance(t, DecimalType):
            return min_twos_complement(decimal_unscaled(value, t.scale))
    except (struct.error, TypeError, ValueError, AttributeError, UnicodeEncodeError) as e:
        if isinstance(e, ValidationError):
            raise
        raise ValidationError(f"cannot serialize {value!r} as a {t} value: {e}") from e
    check_supported_for_values(t, "binary serialization")
    raise Unsupported(f"Appendix D defines no binary form for values of type {t}")


def _expect_len(t: IcebergType, data: bytes, *lengths: int) -> None:
    if len(data) not in lengths:
        want = " or ".join(str(n) for n in lengths)
        raise InvalidMetadata(f"a {t} value must be {want} bytes, got {len(data)}: {data.hex()}")


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Decode Appendix D binary, inferring the written type from the length after promotion."""
    data = bytes(data)
    if isinstance(t, BooleanType):
        _expect_len(t, data, 1)
        return data != b"\x00"
    if isinstance(t, IntegerType | DateType):
        _expect_len(t, data, 4)
        return _INT.unpack(data)[0]
    if isinstance(t, LongType):
        _expect_len(t, data, 4, 8)  # 4 bytes: written while the column was an int
        return (_INT if len(data) == 4 else _LONG).unpack(data)[0]
    if isinstance(t, TimeType | TimestamptzType | TimestamptzNanoType):
        _expect_len(t, data, 8)
        return _LONG.unpack(data)[0]
    if isinstance(t, TimestampType | TimestampNanoType):
        _expect_len(t, data, 4, 8)
        if len(data) == 4:  # written while the column was a date (v3 date -> timestamp)
            per_day = dts.MICROS_PER_DAY if isinstance(t, TimestampType) else dts.NANOS_PER_DAY
            return _INT.unpack(data)[0] * per_day
        return _LONG.unpack(data)[0]
    if isinstance(t, FloatType):
        _expect_len(t, data, 4)
        return _FLOAT.unpack(data)[0]
    if isinstance(t, DoubleType):
        _expect_len(t, data, 4, 8)  # 4 bytes: written while the column was a float
        return (_FLOAT if len(data) == 4 else _DOUBLE).unpack(data)[0]
    if isinstance(t, StringType):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidMetadata(f"string value is not valid UTF-8: {data.hex()}") from e
    if isinstance(t, UUIDType):
        _expect_len(t, data, 16)
        return uuid.UUID(bytes=data)
    if isinstance(t, FixedType):
        # Bounds of fixed columns may be truncated by some writers, never lengthened.
        if len(data) > t.length:
            raise InvalidMetadata(f"a {t} value must be at most {t.length} bytes, got {len(data)}")
        return data
    if isinstance(t, BinaryType):
        return data
    if isinstance(t, DecimalType):
        if not data:
            raise InvalidMetadata(f"a {t} value cannot be empty")
        # A promoted decimal(P', S) column may hold shorter values written at precision P < P'.
        return decimal_from_unscaled(int.from_bytes(data, "big", signed=True), t.scale)
    check_supported_for_values(t, "binary deserialization")
    raise Unsupported(f"Appendix D defines no binary form for values of type {t}")


# --- Appendix D JSON -----------------------------------------------------------------------


def _float_json(value: float, single: bool) -> float | str:
    # Jackson's default writes non-finite numbers as the strings "NaN", "Infinity", "-Infinity".
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    # A float column's value is a float32; write its shortest float32 digits, as Java does.
    return float(str(np.float32(value))) if single else float(value)


def _struct_items(t: StructType, value: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(value, Mapping):
        for f in t.fields:
            yield f, value.get(f.field_id, value.get(str(f.field_id), value.get(f.name)))
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        if len(value) != len(t.fields):
            raise ValidationError(f"{t} value {value!r} does not have {len(t.fields)} fields")
        yield from zip(t.fields, value)
    else:
        raise ValidationError(f"not a struct value for {t}: {value!r}")


def to_json(t: IcebergType, value: Any) -> Any:
    """Appendix D JSON single-value form of an internal value (None → JSON null)."""
    if value is None:
        return None
    if isinstance(t, StructType):
        # Java omits null fields; a missing field reads back as null.
        return {
            str(f.field_id): to_json(f.field_type, v) for f, v in _struct_items(t, value) if v is not None
        }
    if isinstance(t, ListType):
        return [to_json(t.element_type, v) for v in value]
    if isinstance(t, UnknownType):
        raise ValidationError(f"a value of type unknown must be null, got {value!r}")
    if isinstance(t, MapType):
        items = list(value.items())
        return {
            "keys": [to_json(t.key_type, k) for k, _ in items],
            "values": [to_json(t.value_type, v) for _, v in items],
        }
    try:
        if isinstance(t, BooleanType):
            return bool(value)
        if isinstance(t, IntegerType | LongType):
            return int(value)
        if isinstance(t, FloatType | DoubleType):
            return _float_json(float(value), isinstance(t, FloatType))
        if isinstance(t, DecimalType):
            d = decimal_from_unscaled(decimal_unscaled(value, t.scale), t.scale)
            # Positive scale: plain digits ("14.20"); negative scale: scientific ("2E+20").
            return f"{d:f}" if t.scale >= 0 else str(d)
        if isinstance(t, DateType):
            return dts.format_date(value)
        if isinstance(t, TimeType):
            return dts.format_time(value)
        if isinstance(t, _MICROS_TS):
            return dts.format_timestamp(value, utc=isinstance(t, TimestamptzType))
        if isinstance(t, _NANOS_TS):
            return dts.format_timestamp_nanos(value, utc=isinstance(t, TimestamptzNanoType))
        if isinstance(t, StringType):
            return str(value)
        if isinstance(t, UUIDType):
            return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
        if isinstance(t, FixedType | BinaryType):
            return bytes(value).hex()
    except (TypeError, ValueError, AttributeError) as e:
        if isinstance(e, ValidationError):
            raise
        raise ValidationError(f"cannot serialize {value!r} as a JSON {t} value: {e}") from e
    check_supported_for_values(t, "JSON serialization")
    raise Unsupported(f"no JSON single-value form for values of type {t}")


def _bad_json(t: IcebergType, data: Any, why: str = "") -> InvalidMetadata:
    return InvalidMetadata(f"cannot parse JSON {data!r} as a {t} value{': ' + why if why else ''}")


def _json_int(t: IcebergType, data: Any, lo: int, hi: int) -> int:
    if isinstance(data, bool) or not isinstance(data, int) or not lo <= data <= hi:
        raise _bad_json(t, data)
    return data


def _json_number(t: IcebergType, data: Any) -> float:
    if isinstance(data, str) and data in ("NaN", "Infinity", "-Infinity"):
        return float(data.replace("Infinity", "inf"))
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise _bad_json(t, data)
    return float(data)


def _json_str(t: IcebergType, data: Any) -> str:
    if not isinstance(data, str):
        raise _bad_json(t, data, "expected a string")
    return data


def from_json(t: IcebergType, data: Any) -> Any:
    """Parse an Appendix D JSON single value into the internal representation."""
    if data is None:
        return None
    if isinstance(t, StructType):
        if not isinstance(data, Mapping):
            raise _bad_json(t, data, "expected an object keyed by field id")
        return {f.field_id: from_json(f.field_type, data.get(str(f.field_id))) for f in t.fields}
    if isinstance(t, ListType):
        if not isinstance(data, list):
            raise _bad_json(t, data, "expected an array")
        return [from_json(t.element_type, v) for v in data]
    if isinstance(t, MapType):
        if not isinstance(data, Mapping) or not isinstance(data.get("keys"), list):
            raise _bad_json(t, data, 'expected {"keys": [...], "values": [...]}')
        keys, vals = data["keys"], data.get("values")
        if not isinstance(vals, list) or len(vals) != len(keys):
            raise _bad_json(t, data, "keys and values must be arrays of the same length")
        return {from_json(t.key_type, k): from_json(t.value_type, v) for k, v in zip(keys, vals)}
    if isinstance(t, BooleanType):
        if not isinstance(data, bool):
            raise _bad_json(t, data)
        return data
    if isinstance(t, IntegerType):
        return _json_int(t, data, INT_MIN, INT_MAX)
    if isinstance(t, LongType):
        return _json_int(t, data, LONG_MIN, LONG_MAX)
    if isinstance(t, FloatType):
        number = _json_number(t, data)
        try:
            return round_to_float32(number)
        except OverflowError as e:
            raise _bad_json(t, data, "out of range for a float") from e
    if isinstance(t, DoubleType):
        return _json_number(t, data)
    if isinstance(t, UnknownType):
        raise _bad_json(t, data, "values of type unknown are always null")
    text = _json_str(t, data)
    try:
        if isinstance(t, DecimalType):
            d = Decimal(text)
            # Java requires the written scale to equal the type's; accept any exact rescaling.
            return decimal_from_unscaled(decimal_unscaled(d, t.scale), t.scale)
        if isinstance(t, DateType):
            return dts.parse_date(text)
        if isinstance(t, TimeType):
            return _exact_micros(dts.parse_time_nanos(text))
        if isinstance(t, _ALL_TS):
            nanos, offset = dts.parse_timestamp_nanos(text)
            if isinstance(t, _UTC_TS) and offset != 0:
                raise _bad_json(t, data, "the zone offset must be +00:00")
            if not isinstance(t, _UTC_TS) and offset is not None:
                raise _bad_json(t, data, "a timestamp without zone must not have an offset")
            return nanos if isinstance(t, _NANOS_TS) else _exact_micros(nanos)
        if isinstance(t, StringType):
            return text
        if isinstance(t, UUIDType):
            return uuid.UUID(text)
        if isinstance(t, FixedType | BinaryType):
            raw = bytes.fromhex(text)
            if isinstance(t, FixedType) and len(raw) != t.length:
                raise _bad_json(t, data, f"expected {t.length} bytes, got {len(raw)}")
            return raw
    except (ValueError, InvalidOperation) as e:
        raise _bad_json(t, data, str(e)) from e
    check_supported_for_values(t, "JSON deserialization")
    raise Unsupported(f"no JSON single-value form for values of type {t}")


def _exact_micros(nanos: int) -> int:
    micros, rest = divmod(nanos, dts.NANOS_PER_MICRO)
    if rest:
        raise ValueError("value has sub-microsecond digits but the type has microsecond precision")
    return micros


# --- user values → internal ----------------------------------------------------------------


def _datetime64_to_unit(value: np.datetime64, per_second: int) -> int | None:
    """A numpy datetime64 as an integer count of 1/per_second seconds (floored), or None for NaT."""
    if np.isnat(value):
        return None
    unit, count = np.datetime_data(value.dtype)
    if unit in ("Y", "M", "W", "generic"):
        value, unit, count = value.astype("datetime64[D]"), "D", 1
    factor = {"D": 86_400, "h": 3_600, "m": 60, "s": 1}
    raw = int(value.astype(np.int64)) * count
    if unit in factor:
        return raw * factor[unit] * per_second
    sub = {"ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000, "ps": 10**12, "fs": 10**15, "as": 10**18}
    return raw * per_second // sub[unit]


def _datetime_nanos(value: dt.datetime, t: IcebergType) -> int:
    local = dts.days_from_civil(value.year, value.month, value.day) * dts.NANOS_PER_DAY + (
        ((value.hour * 60 + value.minute) * 60 + value.second) * dts.NANOS_PER_SECOND
        + value.microsecond * dts.NANOS_PER_MICRO
        + int(getattr(value, "nanosecond", 0))  # pandas.Timestamp carries nanoseconds
    )
    offset = value.utcoffset()
    if offset is None:
        return local  # naive: wall time for timestamp, UTC for timestamptz
    if not isinstance(t, _UTC_TS):
        raise ValidationError("the type has no zone but the datetime is zone-aware")
    return local - (offset // dt.timedelta(microseconds=1)) * dts.NANOS_PER_MICRO


def _temporal_nanos_to(t: IcebergType, nanos: int) -> int:
    if isinstance(t, _NANOS_TS):
        return nanos
    return _exact_micros(nanos)


def _check_range(t: IcebergType, value: int, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise ValidationError(f"{value} is out of range")
    return value


def _to_timestamp(t: IcebergType, value: Any) -> int:
    if isinstance(value, np.datetime64):
        converted = _datetime64_to_unit(value, dts.NANOS_PER_SECOND)
        if converted is None:
            raise ValidationError("NaT is not a value; use None for null")
        return _temporal_nanos_to(t, converted)
    if isinstance(value, dt.datetime):
        return _temporal_nanos_to(t, _datetime_nanos(value, t))
    if isinstance(value, dt.date):
        return _temporal_nanos_to(
            t, dts.days_from_civil(value.year, value.month, value.day) * dts.NANOS_PER_DAY
        )
    if isinstance(value, str):
        nanos, offset = dts.parse_timestamp_nanos(value)
        if offset is not None and not isinstance(t, _UTC_TS):
            raise ValidationError("the type has no zone but the text has an offset")
        return _temporal_nanos_to(t, nanos)
    if isinstance(value, int) and not isinstance(value, bool):
        return _check_range(t, value, LONG_MIN, LONG_MAX)
    raise TypeError(f"unsupported value type {type(value).__name__}")


def _to_date(t: IcebergType, value: Any) -> int:
    if isinstance(value, np.datetime64):
        days = _datetime64_to_unit(value, 1)
        if days is None:
            raise ValidationError("NaT is not a value; use None for null")
        return days // 86_400
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None or value.time() != dt.time():
            raise ValidationError("a datetime with a time of day or a zone is not a date")
        value = value.date()
    if isinstance(value, dt.date):
        return dts.days_from_civil(value.year, value.month, value.day)
    if isinstance(value, str):
        return dts.parse_date(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _check_range(t, value, INT_MIN, INT_MAX)
    raise TypeError(f"unsupported value type {type(value).__name__}")


def _to_time(t: IcebergType, value: Any) -> int:
    if isinstance(value, np.timedelta64):
        value = int(value.astype("timedelta64[us]").astype(np.int64))
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise ValidationError("the type has no zone")
        value = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    elif isinstance(value, dt.timedelta):
        value = value // dt.timedelta(microseconds=1)
    elif isinstance(value, str):
        value = _exact_micros(dts.parse_time_nanos(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return _check_range(t, value, 0, dts.MICROS_PER_DAY - 1)
    raise TypeError(f"unsupported value type {type(value).__name__}")


def _to_decimal(t: DecimalType, value: Any) -> Decimal:
    if isinstance(value, float):
        value = Decimal(repr(value))  # the float's shortest digits, not its binary expansion
    elif isinstance(value, int | str) and not isinstance(value, bool):
        value = Decimal(value.strip() if isinstance(value, str) else value)
    if not isinstance(value, Decimal):
        raise TypeError(f"unsupported value type {type(value).__name__}")
    if not value.is_finite():
        raise ValidationError("not a finite number")
    unscaled = decimal_unscaled(value, t.scale)
    if abs(unscaled) >= 10**t.precision:
        raise ValidationError(f"more than {t.precision} digits")
    return decimal_from_unscaled(unscaled, t.scale)


def _to_float(t: IcebergType, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise TypeError(f"unsupported value type {type(value).__name__}")
    number = float(value)
    if isinstance(t, FloatType):
        try:
            return round_to_float32(number)
        except OverflowError as e:
            raise ValidationError("out of range for a 32-bit float") from e
    return number


def _to_primitive(t: IcebergType, value: Any) -> Any:
    if isinstance(t, BooleanType):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif isinstance(t, IntegerType | LongType):
        if isinstance(value, str):
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool):
            if isinstance(t, IntegerType):
                return _check_range(t, value, INT_MIN, INT_MAX)
            return _check_range(t, value, LONG_MIN, LONG_MAX)
    elif isinstance(t, FloatType | DoubleType):
        return _to_float(t, value)
    elif isinstance(t, DecimalType):
        return _to_decimal(t, value)
    elif isinstance(t, DateType):
        return _to_date(t, value)
    elif isinstance(t, TimeType):
        return _to_time(t, value)
    elif isinstance(t, _ALL_TS):
        return _to_timestamp(t, value)
    elif isinstance(t, StringType):
        if isinstance(value, str):
            return str(value)
    elif isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value
        if isinstance(value, str):
            return uuid.UUID(value.strip())
        if isinstance(value, bytes | bytearray | memoryview):
            return uuid.UUID(bytes=bytes(value))
    elif isinstance(t, FixedType | BinaryType):
        if isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)
            if isinstance(t, FixedType) and len(raw) != t.length:
                raise ValidationError(f"expected {t.length} bytes, got {len(raw)}")
            return raw
    elif isinstance(t, UnknownType):
        raise ValidationError("values of type unknown are always null")
    else:
        check_supported_for_values(t, "value conversion")
        raise Unsupported(f"cannot convert values of type {t}")
    raise TypeError(f"unsupported value type {type(value).__name__}")


def to_internal(t: IcebergType, value: Any) -> Any:
    """Convert a user value (``datetime``, ``date``, ISO strings, ``Decimal``...) to internal form.

    Accepts the natural Python objects for each type, ISO-8601 text for temporal types,
    numpy scalars, and values that are already internal (ints for dates, times and
    timestamps). For ``timestamptz`` columns aware datetimes (and texts with an offset) are
    converted to UTC and naive ones are taken to be UTC; ``timestamp`` columns reject zoned
    values. Raises :class:`ValidationError` naming the type and value when the value cannot
    be represented exactly (e.g. a decimal with too many digits, sub-µs digits for µs types).
    """
    if value is None:
        return None
    if isinstance(value, np.generic) and not isinstance(value, np.datetime64 | np.timedelta64):
        value = value.item()
    if isinstance(t, StructType):
        return {f.field_id: to_internal(f.field_type, v) for f, v in _struct_items(t, value)}
    if isinstance(t, ListType):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise ValidationError(f"not a {t} value: {value!r}")
        return [to_internal(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        if not isinstance(value, Mapping):
            raise ValidationError(f"not a {t} value: {value!r}")
        return {to_internal(t.key_type, k): to_internal(t.value_type, v) for k, v in value.items()}
    try:
        return _to_primitive(t, value)
    except Unsupported:
        raise
    except (TypeError, ValueError, ArithmeticError) as e:  # ValidationError is a ValueError
        raise ValidationError(f"cannot convert {value!r} to a {t} value: {e}") from e


def to_python(t: IcebergType, value: Any) -> Any:
    """Convert an internal value to the natural Python object (``date``, ``datetime``...).

    ``timestamp`` gives a naive ``datetime``, ``timestamptz`` an aware one in UTC. Python's
    ``datetime`` has microsecond precision, so nanosecond timestamps are floored to µs.
    Structs become dicts keyed by field *name*.
    """
    if value is None:
        return None
    try:
        if isinstance(t, DateType):
            return dt.date(*dts.civil_from_days(value))
        if isinstance(t, TimeType):
            secs, micros = divmod(value, dts.MICROS_PER_SECOND)
            return dt.time(secs // 3600, secs // 60 % 60, secs % 60, micros)
        if isinstance(t, _ALL_TS):
            micros = value // dts.NANOS_PER_MICRO if isinstance(t, _NANOS_TS) else value
            base = _EPOCH_UTC if isinstance(t, _UTC_TS) else _EPOCH
            return base + dt.timedelta(microseconds=micros)
    except (ValueError, OverflowError) as e:
        raise ValidationError(f"{t} value {value} is outside Python's datetime range") from e
    if isinstance(t, StructType):
        return {f.name: to_python(f.field_type, v) for f, v in _struct_items(t, value)}
    if isinstance(t, ListType):
        return [to_python(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return {to_python(t.key_type, k): to_python(t.value_type, v) for k, v in value.items()}
    return value


# --- bound truncation (Java's "truncate(N)" metrics mode) -----------------------------------

# UTF-16 surrogates are not Unicode scalar values and cannot appear in valid UTF-8.
_SURROGATES = range(0xD800, 0xE000)
_MAX_CODE_POINT = 0x10FFFF


def _check_width(width: int) -> None:
    if width <= 0:
        raise ValidationError(f"bound truncation width must be positive, got {width}")


def truncate_lower_bound(t: IcebergType, value: Any, width: int) -> Any:
    """A lower bound for ``value`` no longer than ``width`` (code points or bytes).

    A prefix is never greater than the value, so it stays a valid lower bound. Only string,
    binary and fixed bounds are truncated (fixed like binary, as Iceberg Java's metrics do);
    other types are returned unchanged.
    """
    _check_width(width)
    if value is None or not isinstance(t, StringType | BinaryType | FixedType):
        return value
    return value[:width]


def truncate_upper_bound(t: IcebergType, value: Any, width: int) -> Any:
    """An upper bound for ``value`` no longer than ``width``, or None if none exists.

    The prefix is made an upper bound by incrementing its last incrementable unit: for
    strings the last code point below U+10FFFF (jumping over the surrogate range); for binary
    and fixed the last byte below 0xFF, dropping the 0xFF bytes after it (a carry). Values no
    longer than ``width`` are returned unchanged; other types are returned unchanged.
    """
    _check_width(width)
    if value is None or not isinstance(t, StringType | BinaryType | FixedType) or len(value) <= width:
        return value
    if isinstance(t, StringType):
        prefix = value[:width]
        for i in range(width - 1, -1, -1):
            cp = ord(prefix[i]) + 1
            if cp in _SURROGATES:
                cp = _SURROGATES.stop
            if cp <= _MAX_CODE_POINT:
                return prefix[:i] + chr(cp)
        return None
    head = bytearray(value[:width])
    for i in range(width - 1, -1, -1):
        if head[i] < 0xFF:
            head[i] += 1
            return bytes(head[: i + 1])
    return None


# --- ordering ------------------------------------------------------------------------------

_SIGN_MASK = 0x7FFF_FFFF_FFFF_FFFF


def _double_order(value: float) -> int:
    # IEEE 754 totalOrder as an integer: flip the magnitude bits of negatives so that
    # -inf < ... < -0.0 < +0.0 < ... < +inf < NaN (spec Appendix D "-0.0 sorts before +0.0").
    bits: int = _LONG.unpack(_DOUBLE.pack(value))[0]
    return bits ^ _SIGN_MASK if bits < 0 else bits


def _identity(value: Any) -> Any:
    return value


def sort_key(t: IcebergType) -> Callable[[Any], Any]:
    """A key function that totally orders internal values of primitive type ``t``.

    Floats order as IEEE totalOrder (``-0.0 < +0.0``; NaN above +inf), strings by code point
    (the same as UTF-8 byte order), binary and fixed as unsigned bytes, uuids as unsigned
    128-bit numbers. NaN is never a bound, so evaluators should exclude it before comparing.
    """
    if isinstance(t, FloatType | DoubleType):
        return _double_order
    if isinstance(t, StructType | ListType | MapType):
        raise Unsupported(f"values of type {t} have no order")
    check_supported_for_values(t, "ordering")
    return _identity


def compare(t: IcebergType, left: Any, right: Any) -> int:
    """-1, 0 or 1 as ``left`` sorts before, with or after ``right`` under :func:`sort_key`."""
    key = sort_key(t)
    a, b = key(left), key(right)
    return (a > b) - (a < b)


def is_nan(value: Any) -> bool:
    """Whether ``value`` is a floating-point NaN (which Appendix D forbids as a bound)."""
    return isinstance(value, float) and math.isnan(value)


__all__ = [
    "compare",
    "decimal_from_unscaled",
    "from_bytes",
    "from_json",
    "is_nan",
    "round_to_float32",
    "sort_key",
    "to_bytes",
    "to_internal",
    "to_json",
    "to_python",
    "truncate_lower_bound",
    "truncate_upper_bound",
]
