"""Partition transforms (spec: "Partition Transforms", "Bucket Transform Details",
"Truncate Transform Details", Appendix B).

Values use Firn's internal representation (see ``firn.spec.values``): date = days since
epoch (int), time = µs since midnight (int), timestamp/timestamptz = µs since epoch (int),
timestamp_ns/timestamptz_ns = ns since epoch (int), decimal = ``decimal.Decimal``,
uuid = ``uuid.UUID``, fixed/binary = ``bytes``, string = ``str``.

Transforms are unbound values: the source type is passed to each call, so one
``BucketTransform(16)`` serves every column. :meth:`Transform.apply` transforms one value and
:meth:`Transform.apply_arrow` a whole Arrow column with numpy kernels
(:mod:`firn.spec.arrow_transforms`); both agree exactly.
"""

from __future__ import annotations

import base64
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from firn.errors import Unsupported, ValidationError
from firn.spec import arrow_transforms as kernels
from firn.spec import datetimes as dts
from firn.spec.murmur3 import decimal_unscaled, hash_value
from firn.spec.types import (
    DATE,
    INT,
    STRING,
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)
from firn.spec.values import decimal_from_unscaled
from firn.util.arrow_chunks import single_array

_INTS = (IntegerType, LongType)
_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_NANO_TIMESTAMPS = (TimestampNanoType, TimestamptzNanoType)
_UTC_TIMESTAMPS = (TimestamptzType, TimestamptzNanoType)
# Spec "Partition Transforms": the source types each transform accepts.
_BUCKET_SOURCES = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    *_TIMESTAMPS,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)
_INT_MAX = 0x7FFFFFFF


def _java_float_text(value: float, single: bool) -> str:
    """Java ``Float.toString`` / ``Double.toString`` (shortest digits, ``1.0E10`` style)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = Decimal(str(np.float32(value)) if single else repr(value)).normalize()
    sign, digits, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        text = f"{abs(shortest):f}"
        return prefix + (text if "." in text else text + ".0")
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{prefix}{mantissa}E{len(digits) - 1 + exponent}"


def human_value(source: IcebergType, value: Any) -> str:
    """Java's human string of a *source* value (``Transform.toHumanString`` of identity)."""
    if value is None:
        return "null"
    if isinstance(source, DateType):
        return dts.format_date(value)
    if isinstance(source, TimeType):
        return dts.java_local_time(value)
    if isinstance(source, TimestampType | TimestamptzType):
        return dts.format_timestamp(value, utc=isinstance(source, TimestamptzType))
    if isinstance(source, TimestampNanoType | TimestamptzNanoType):
        return dts.format_timestamp_nanos(value, utc=isinstance(source, TimestamptzNanoType))
    if isinstance(source, FloatType | DoubleType):
        return _java_float_text(float(value), isinstance(source, FloatType))
    return _default_human(value)


def _default_human(value: Any) -> str:
    # Java's Transform.toHumanString default: base64 for binary, String.valueOf otherwise.
    if value is None:
        return "null"
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Transform(ABC):
    """A partition or sort transform. Immutable, hashable, ``str()`` is the spec spelling."""

    __slots__ = ()

    @abstractmethod
    def can_transform(self, source: IcebergType) -> bool:
        """Whether this transform accepts values of ``source`` type."""

    @abstractmethod
    def result_type(self, source: IcebergType) -> IcebergType:
        """The type of transformed values for a ``source`` column."""

    @abstractmethod
    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one internal-representation value (None maps to None)."""

    @abstractmethod
    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Vectorized :meth:`apply` over an Arrow array of the source column."""

    @abstractmethod
    def __str__(self) -> str:
        """The spec spelling: ``identity``, ``bucket[16]``, ``truncate[10]``, ``day``..."""

    @property
    def preserves_order(self) -> bool:
        """Whether ``a <= b`` implies ``apply(a) <= apply(b)``."""
        return False

    @property
    def is_identity(self) -> bool:
        """True only for ``identity``."""
        return False

    @property
    def is_void(self) -> bool:
        """True only for ``void``."""
        return False

    @property
    def dedup_name(self) -> str:
        """Transforms with the same dedup name are redundant on one source column.

        Java groups all time transforms as ``time``: partitioning by both ``day(ts)`` and
        ``hour(ts)`` is redundant.
        """
        return str(self)

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether data ordered by this transform is also ordered by ``other`` (same source)."""
        return self == other

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """Java's human-readable partition value (e.g. ``2017-11-16`` for day)."""
        return _default_human(value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, str(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _check_source(transform: Transform, source: IcebergType) -> None:
    if not transform.can_transform(source):
        raise ValidationError(f"transform {transform} cannot be applied to values of type {source}")


def _prepare(transform: Transform, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
    _check_source(transform, source)
    return kernels.as_array(values)


class IdentityTransform(Transform):
    """``identity``: the source value, unmodified."""

    __slots__ = ()

    def can_transform(self, source: IcebergType) -> bool:
        # Spec: any primitive except geometry and geography (variant is not a primitive).
        return isinstance(source, PrimitiveType) and not isinstance(
            source, GeometryType | GeographyType | VariantType
        )

    def result_type(self, source: IcebergType) -> IcebergType:
        return source

    def apply(self, source: IcebergType, value: Any) -> Any:
        return value

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        _check_source(self, source)
        return single_array(values)

    @property
    def preserves_order(self) -> bool:
        return True

    @property
    def is_identity(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Ordering by the value orders every order-preserving function of it.
        return other.preserves_order

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        return human_value(source, value)

    def __str__(self) -> str:
        return "identity"


@dataclass(frozen=True, eq=False, slots=True)
class BucketTransform(Transform):
    """``bucket[N]``: ``(murmur3_x86_32(v) & Integer.MAX_VALUE) % N`` (spec Appendix B)."""

    num_buckets: int

    def __post_init__(self) -> None:
        if (
            isinstance(self.num_buckets, bool)
            or not isinstance(self.num_buckets, int)
            or self.num_buckets <= 0
        ):
            raise ValidationError(f"bucket count must be a positive integer, got {self.num_buckets!r}")

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _BUCKET_SOURCES)

    def result_type(self, source: IcebergType) -> IcebergType:
        return INT

    def apply(self, source: IcebergType, value: Any) -> int | None:
        if value is None:
            return None
        hashed = hash_value(source, value)
        return None if hashed is None else (hashed & _INT_MAX) % self.num_buckets

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.bucket_array(source, _prepare(self, source, values), self.num_buckets)

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def __repr__(self) -> str:
        return f"BucketTransform({self.num_buckets})"


@dataclass(frozen=True, eq=False, slots=True)
class TruncateTransform(Transform):
    """``truncate[W]``: integers floored to a multiple of W, strings/binary cut to W units."""

    width: int

    def __post_init__(self) -> None:
        if isinstance(self.width, bool) or not isinstance(self.width, int) or self.width <= 0:
            raise ValidationError(f"truncate width must be a positive integer, got {self.width!r}")

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TRUNCATE_SOURCES)

    def result_type(self, source: IcebergType) -> IcebergType:
        return source

    def apply(self, source: IcebergType, value: Any) -> Any:
        if value is None:
            return None
        w = self.width
        if isinstance(source, _INTS):
            # Spec note 1: the remainder must be non-negative; Python's % already floors.
            # Exact arithmetic: projections rely on truncate being monotonic, so results below
            # the type's minimum (truncate[10](INT_MIN)) are not wrapped here. The Arrow path that
            # computes stored partition values wraps like Java's int arithmetic.
            return value - value % w
        if isinstance(source, DecimalType):
            # Spec note 2: W applies to the unscaled value at the column's scale.
            unscaled = decimal_unscaled(value, source.scale)
            return decimal_from_unscaled(unscaled - unscaled % w, source.scale)
        if isinstance(source, StringType | BinaryType):
            # Python strings index by code point (note 3); bytes by byte (note 4).
            return value[:w]
        raise ValidationError(f"truncate cannot transform values of type {source}")

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.truncate_array(source, _prepare(self, source, values), self.width)

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Without the source type only equal widths are safe: for numbers truncate[a]
        # orders truncate[b] iff a divides b, for strings iff a >= b.
        return self == other

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        return human_value(source, value)

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def __repr__(self) -> str:
        return f"TruncateTransform({self.width})"


class _TimeTransform(Transform):
    """Common part of year/month/day/hour: floor semantics before the epoch (spec, Java)."""

    __slots__ = ()
    # Smaller is finer; ordering by a finer unit also orders every coarser one.
    granularity: ClassVar[int]

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (DateType, *_TIMESTAMPS))

    def result_type(self, source: IcebergType) -> IcebergType:
        return INT

    @property
    def preserves_order(self) -> bool:
        return True

    @property
    def dedup_name(self) -> str:
        return "time"

    def satisfies_order_of(self, other: Transform) -> bool:
        return isinstance(other, _TimeTransform) and self.granularity <= other.granularity

    @staticmethod
    def _days(source: IcebergType, value: int) -> int:
        if isinstance(source, DateType):
            return value
        per_day = dts.NANOS_PER_DAY if isinstance(source, _NANO_TIMESTAMPS) else dts.MICROS_PER_DAY
        return value // per_day


class YearTransform(_TimeTransform):
    """``year``: whole years since 1970 (1969 → -1)."""

    __slots__ = ()
    granularity = 3

    def apply(self, source: IcebergType, value: Any) -> int | None:
        return None if value is None else dts.years_from_days(self._days(source, value))

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.year_array(source, _prepare(self, source, values))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        return "null" if value is None else dts.format_year(dts.EPOCH_YEAR + value)

    def __str__(self) -> str:
        return "year"


class MonthTransform(_TimeTransform):
    """``month``: whole months since 1970-01 (1969-12 → -1)."""

    __slots__ = ()
    granularity = 2

    def apply(self, source: IcebergType, value: Any) -> int | None:
        return None if value is None else dts.months_from_days(self._days(source, value))

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.month_array(source, _prepare(self, source, values))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        year, month0 = divmod(value, 12)
        return f"{dts.format_year(dts.EPOCH_YEAR + year)}-{month0 + 1:02d}"

    def __str__(self) -> str:
        return "month"


class DayTransform(_TimeTransform):
    """``day``: days since 1970-01-01, typed ``date`` (spec note 1: readers also accept int)."""

    __slots__ = ()
    granularity = 1

    def result_type(self, source: IcebergType) -> IcebergType:
        return DATE

    def apply(self, source: IcebergType, value: Any) -> int | None:
        return None if value is None else self._days(source, value)

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.day_array(source, _prepare(self, source, values))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        return "null" if value is None else dts.format_date(value)

    def __str__(self) -> str:
        return "day"


class HourTransform(_TimeTransform):
    """``hour``: whole hours since 1970-01-01T00:00 (timestamps only)."""

    __slots__ = ()
    granularity = 0

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TIMESTAMPS)

    def apply(self, source: IcebergType, value: Any) -> int | None:
        if value is None:
            return None
        per_hour = dts.NANOS_PER_HOUR if isinstance(source, _NANO_TIMESTAMPS) else dts.MICROS_PER_HOUR
        return int(value // per_hour)

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return kernels.hour_array(source, _prepare(self, source, values))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{dts.format_date(days)}-{hour:02d}"

    def __str__(self) -> str:
        return "hour"


class VoidTransform(Transform):
    """``void``: always null; used to drop a partition field in v1 tables."""

    __slots__ = ()

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def result_type(self, source: IcebergType) -> IcebergType:
        return source

    def apply(self, source: IcebergType, value: Any) -> None:
        return None

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        return pa.nulls(len(values), type=values.type)

    @property
    def is_void(self) -> bool:
        return True

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        return "null"

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, eq=False, slots=True)
class UnknownTransform(Transform):
    """A transform this version does not know; kept verbatim so metadata round-trips.

    Spec "Partitioning": readers ignore such fields when filtering (required in v3) and
    writers must not commit data with them, so :meth:`apply` raises :class:`Unsupported`.
    The result type is ``string``, as in Iceberg Java.
    """

    text: str

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def result_type(self, source: IcebergType) -> IcebergType:
        return STRING

    def apply(self, source: IcebergType, value: Any) -> Any:
        raise Unsupported(f"cannot apply unknown transform {self.text!r}; writers must not use it")

    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        raise Unsupported(f"cannot apply unknown transform {self.text!r}; writers must not use it")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"UnknownTransform({self.text!r})"


IDENTITY = IdentityTransform()
YEAR = YearTransform()
MONTH = MonthTransform()
DAY = DayTransform()
HOUR = HourTransform()
VOID = VoidTransform()

_SIMPLE: dict[str, Transform] = {str(t): t for t in (IDENTITY, YEAR, MONTH, DAY, HOUR, VOID)}
_WITH_ARG = re.compile(r"^\s*(\w+)\s*\[\s*(\d+)\s*\]\s*$")


def parse_transform(text: str) -> Transform:
    """Parse ``identity``, ``bucket[N]``, ``truncate[W]``, ``year``…``hour``, ``void``;
    anything else becomes an :class:`UnknownTransform` (v3 readers must tolerate them).

    Names are case-insensitive and surrounding whitespace is ignored, as in Java's
    ``Transforms.fromString``. A zero bucket count or width raises :class:`ValidationError`.
    """
    if m := _WITH_ARG.match(text):
        name, arg = m.group(1).lower(), int(m.group(2))
        if name == "bucket":
            return BucketTransform(arg)
        if name == "truncate":
            return TruncateTransform(arg)
    simple = _SIMPLE.get(text.strip().lower())
    return simple if simple is not None else UnknownTransform(text)


__all__ = [
    "DAY",
    "HOUR",
    "IDENTITY",
    "MONTH",
    "VOID",
    "YEAR",
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "YearTransform",
    "human_value",
    "parse_transform",
]
