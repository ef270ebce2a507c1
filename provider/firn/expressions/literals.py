"""Converting user literals to a column type's internal representation (used by binding).

The result is either the exact internal value (see :mod:`firn.spec.values`) or a
:class:`Between` when the literal lies strictly between two values the column can hold:
``5.5`` on an ``int`` column, ``2**40`` on an ``int`` column (above its maximum), ``1.005``
on a ``decimal(9, 2)``, or ``'...T00:00:00.0000001'`` on a microsecond timestamp. Binding
then rewrites the predicate exactly (``id < 5.5`` is ``id <= 5``, ``id = 5.5`` is false)
instead of rounding, which could change which rows match. Iceberg Java instead rejects
fractional literals and turns out-of-range ones into constants; the results agree with it
wherever it accepts the input, except that nulls are treated as this package's semantics
require (see :mod:`firn.expressions`).

Floating-point columns are the exception: a literal is rounded to the nearest ``double``
(or ``float`` for ``float`` columns), as Java does, because users write ``x = 1.1`` meaning
the stored value nearest to 1.1.

Types this module does not recognise are handed to :func:`firn.spec.values.to_internal`.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, InvalidOperation

from firn.errors import FirnError, ValidationError
from firn.expressions.predicates import InternalValue
from firn.spec import values
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
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_MICROS_PER_DAY = 86_400_000_000
_NANOS_PER_DAY = 86_400_000_000_000
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
# Enough digits for any decimal(38, s) and its neighbours.
_DECIMAL_CONTEXT = Context(prec=80)

_TIMESTAMP_RE = re.compile(
    r"^(?P<date>[+-]?\d{4,6}-\d{2}-\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?)?"
    r"(?P<tz>Z|z|[+-]\d{2}(?::?\d{2})?)?$"
)
_TIME_RE = re.compile(r"^(?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?$")


@dataclass(frozen=True, slots=True)
class Between:
    """A literal the column cannot represent; it lies strictly between ``below`` and ``above``.

    ``below`` is the largest representable value under the literal (None when the literal
    is below the type's range), ``above`` the smallest one over it (None when above range).
    """

    below: InternalValue | None
    above: InternalValue | None


Converted = InternalValue | Between


def type_range(t: IcebergType) -> tuple[int, int] | None:
    """The (min, max) internal values of integer-backed types, or None for other types."""
    if isinstance(t, IntegerType | DateType):
        return INT_MIN, INT_MAX
    if isinstance(
        t, LongType | TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType
    ):
        return LONG_MIN, LONG_MAX
    return None


def _bounded_int(t: IcebergType, exact: int | None, floor: int, ceil: int) -> Converted:
    lo, hi = type_range(t) or (LONG_MIN, LONG_MAX)
    if exact is not None and lo <= exact <= hi:
        return exact
    if floor >= hi and exact != hi:
        return Between(hi, None)
    if ceil <= lo and exact != lo:
        return Between(None, lo)
    return Between(floor, ceil)


def _fail(column: str, t: IcebergType, value: object, why: str = "") -> ValidationError:
    detail = f": {why}" if why else ""
    return ValidationError(
        f"invalid literal for column {column!r} of type {t}: {value!r} ({type(value).__name__}){detail}"
    )


def _delegate(t: IcebergType, value: object, column: str) -> InternalValue:
    """Inputs this module has no exactness rule for (numpy and pandas scalars, numeric strings)."""
    try:
        converted: InternalValue = values.to_internal(t, value)
    except (FirnError, NotImplementedError, ValueError, TypeError, ArithmeticError) as e:
        raise _fail(column, t, value, str(e)) from e
    if converted is None:
        raise _fail(column, t, value, "null is not a value, use is_null")
    return converted


def _to_integer(t: IcebergType, value: object, column: str) -> Converted:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        return _delegate(t, value, column)
    if isinstance(value, numbers.Integral):
        v = int(value)
        return _bounded_int(t, v, v, v)
    d = value if isinstance(value, Decimal) else None
    if d is None:
        f = float(value)
        if math.isinf(f):
            lo, hi = type_range(t) or (LONG_MIN, LONG_MAX)
            return Between(hi, None) if f > 0 else Between(None, lo)
        d = Decimal(f)
    if not d.is_finite():
        raise _fail(column, t, value, "not a finite number")
    floor = int(d.to_integral_value(rounding=ROUND_FLOOR, context=_DECIMAL_CONTEXT))
    if floor == d:
        return _bounded_int(t, floor, floor, floor)
    return _bounded_int(t, None, floor, floor + 1)


def _to_floating(t: IcebergType, value: object, column: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        converted = _delegate(t, value, column)
        assert isinstance(converted, float)
        return converted
    try:
        f = float(value)
    except OverflowError:  # an int or Decimal beyond the double range
        f = math.inf if Decimal(str(value)) > 0 else -math.inf
    if math.isnan(f):
        raise _fail(column, t, value, "NaN cannot be compared, use is_nan / not_nan")
    if isinstance(t, FloatType):
        # Round to the nearest 32-bit float, as Java's Literal.to(FloatType) does.
        if abs(f) > FLOAT32_MAX:
            return math.copysign(math.inf, f)
        f = struct.unpack("<f", struct.pack("<f", f))[0]
    return f


def _to_decimal(t: DecimalType, value: object, column: str) -> Converted:
    if isinstance(value, bool):
        raise _fail(column, t, value, "expected a decimal number")
    try:
        if isinstance(value, Decimal):
            d = value
        elif isinstance(value, numbers.Integral):
            d = Decimal(int(value))
        elif isinstance(value, float):
            # repr is the shortest string that round-trips: 0.1 means 0.1, not 0.1000000000000000055.
            d = Decimal(repr(value))
        elif isinstance(value, str):
            d = Decimal(value.strip())
        else:
            return _delegate(t, value, column)
    except InvalidOperation as e:
        raise _fail(column, t, value, "not a decimal number") from e
    if not d.is_finite():
        raise _fail(column, t, value, "not a finite number")
    quantum = Decimal(1).scaleb(-t.scale)
    largest = (Decimal(10**t.precision - 1) * quantum).quantize(quantum, context=_DECIMAL_CONTEXT)
    if d > largest:
        return Between(largest, None)
    if d < -largest:
        return Between(None, -largest)
    floor = d.quantize(quantum, rounding=ROUND_FLOOR, context=_DECIMAL_CONTEXT)
    if floor == d:
        return floor
    ceil = d.quantize(quantum, rounding=ROUND_CEILING, context=_DECIMAL_CONTEXT)
    return Between(floor, ceil)


def _days(d: dt.date) -> int:
    return (d - _EPOCH_DATE).days


def _parse_date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def _parse_timestamp_nanos(text: str, column: str, t: IcebergType) -> tuple[int, bool]:
    """Nanoseconds since the epoch (UTC-adjusted if an offset was given) and whether it had one."""
    m = _TIMESTAMP_RE.match(text.strip())
    if m is None:
        raise _fail(column, t, text, "expected an ISO-8601 timestamp like '2024-01-31T12:00:00'")
    try:
        day = _days(_parse_date(m["date"]))
    except ValueError as e:
        raise _fail(column, t, text, str(e)) from e
    h, mi, s = int(m["h"] or 0), int(m["m"] or 0), int(m["s"] or 0)
    if h > 23 or mi > 59 or s > 59:
        raise _fail(column, t, text, "time of day out of range")
    frac = int((m["f"] or "").ljust(9, "0"))
    nanos = day * _NANOS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1_000_000_000 + frac
    tz = m["tz"]
    if tz is None:
        return nanos, False
    if tz in ("Z", "z"):
        return nanos, True
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    offset_minutes = int(digits[:2]) * 60 + int(digits[2:4] or 0)
    return nanos - sign * offset_minutes * 60 * 1_000_000_000, True


def _datetime_nanos(value: dt.datetime) -> tuple[int, bool]:
    aware = value.tzinfo is not None and value.utcoffset() is not None
    if aware:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 1000, aware


def _to_timestamp(t: IcebergType, value: object, column: str) -> Converted:
    with_zone = isinstance(t, TimestamptzType | TimestamptzNanoType)
    nanos_type = isinstance(t, TimestampNanoType | TimestamptzNanoType)
    if isinstance(value, str):
        nanos, aware = _parse_timestamp_nanos(value, column, t)
    elif isinstance(value, dt.datetime):
        nanos, aware = _datetime_nanos(value)
    elif isinstance(value, dt.date):
        nanos, aware = _days(value) * _NANOS_PER_DAY, False
    else:
        return _delegate(t, value, column)
    if aware and not with_zone:
        # A timestamp without zone is a wall-clock time; converting an instant to it would need
        # a time zone that the table does not record (spec "Primitive Types").
        raise _fail(column, t, value, "has a UTC offset, but the column is a timestamp without time zone")
    # Naive values on a timestamptz column are read as UTC.
    if nanos_type:
        return _bounded_int(t, nanos, nanos, nanos)
    micros, rest = divmod(nanos, 1000)
    if rest == 0:
        return _bounded_int(t, micros, micros, micros)
    return _bounded_int(t, None, micros, micros + 1)


def _to_date(t: DateType, value: object, column: str) -> Converted:
    if isinstance(value, dt.datetime):
        nanos, _ = _datetime_nanos(value)
    elif isinstance(value, dt.date):
        return _bounded_int(t, _days(value), 0, 0)
    elif isinstance(value, str):
        text = value.strip()
        try:
            return _bounded_int(t, _days(_parse_date(text)), 0, 0)
        except ValueError:
            nanos, _ = _parse_timestamp_nanos(text, column, t)
    else:
        return _delegate(t, value, column)
    day, rest = divmod(nanos, _NANOS_PER_DAY)
    return _bounded_int(t, day if rest == 0 else None, day, day + 1)


def _to_time(t: TimeType, value: object, column: str) -> Converted:
    if isinstance(value, dt.time):
        if value.utcoffset() is not None:
            raise _fail(column, t, value, "time values have no time zone")
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if not isinstance(value, str):
        return _delegate(t, value, column)
    m = _TIME_RE.match(value.strip())
    if m is None or int(m["h"]) > 23 or int(m["m"]) > 59 or int(m["s"] or 0) > 59:
        raise _fail(column, t, value, "expected a time like '12:30:00.123456'")
    nanos = ((int(m["h"]) * 60 + int(m["m"])) * 60 + int(m["s"] or 0)) * 1_000_000_000
    nanos += int((m["f"] or "").ljust(9, "0"))
    micros, rest = divmod(nanos, 1000)
    return micros if rest == 0 else Between(micros, micros + 1)


def convert_literal(t: IcebergType, value: object, *, column: str) -> Converted:
    """Convert a user literal to ``t``'s internal representation; ``column`` names it in errors."""
    if isinstance(t, IntegerType | LongType):
        return _to_integer(t, value, column)
    if isinstance(t, FloatType | DoubleType):
        return _to_floating(t, value, column)
    if isinstance(t, DecimalType):
        return _to_decimal(t, value, column)
    if isinstance(t, BooleanType):
        return value if isinstance(value, bool) else _delegate(t, value, column)
    if isinstance(t, StringType):
        if isinstance(value, str):
            return value
        raise _fail(column, t, value, "expected a string (quote it: '...')")
    if isinstance(t, DateType):
        return _to_date(t, value, column)
    if isinstance(t, TimeType):
        return _to_time(t, value, column)
    if isinstance(t, TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        return _to_timestamp(t, value, column)
    if isinstance(t, UUIDType):
        if isinstance(value, uuid.UUID):
            return value
        try:
            if isinstance(value, str):
                return uuid.UUID(value.strip())
            if isinstance(value, bytes) and len(value) == 16:
                return uuid.UUID(bytes=value)
        except ValueError as e:
            raise _fail(column, t, value, "not a UUID") from e
        return _delegate(t, value, column)
    if isinstance(t, FixedType | BinaryType):
        if isinstance(value, bytes):
            if isinstance(t, FixedType) and len(value) != t.length:
                raise _fail(column, t, value, f"expected exactly {t.length} bytes, got {len(value)}")
            return value
        raise _fail(column, t, value, "expected bytes (X'00ff' in filter strings)")
    return _delegate(t, value, column)


__all__ = ["Between", "Converted", "convert_literal", "type_range"]
