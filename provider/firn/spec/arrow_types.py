"""The Arrow type of each Iceberg primitive type, in one place.

Three readers of this table want slightly different things, so it takes two switches:
``large`` (Arrow's 64-bit-offset ``large_string`` / ``large_binary`` for data that may pass
2 GiB per array) and ``uuid_extension`` (Arrow's ``uuid`` extension type, which data files
carry, instead of the plain 16-byte ``fixed`` that literals and typed V4 bounds use; both hold
the 16 big-endian bytes of spec Appendix D).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

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
    UnknownType,
    UUIDType,
)

UTC = "UTC"

# Types whose Arrow type depends on nothing but the type itself.
_FIXED: dict[type[IcebergType], Callable[[], pa.DataType]] = {
    BooleanType: pa.bool_,
    IntegerType: pa.int32,
    LongType: pa.int64,
    FloatType: pa.float32,
    DoubleType: pa.float64,
    DateType: pa.date32,
    TimeType: lambda: pa.time64("us"),
    TimestampType: lambda: pa.timestamp("us"),
    TimestamptzType: lambda: pa.timestamp("us", tz=UTC),
    TimestampNanoType: lambda: pa.timestamp("ns"),
    TimestamptzNanoType: lambda: pa.timestamp("ns", tz=UTC),
    UnknownType: pa.null,
}


def primitive_arrow_type(
    t: IcebergType, *, large: bool = False, uuid_extension: bool = False
) -> pa.DataType | None:
    """The Arrow type of values of Iceberg primitive ``t``; None for a nested type."""
    fixed = _FIXED.get(type(t))
    if fixed is not None:
        return fixed()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, StringType):
        return pa.large_string() if large else pa.string()
    if isinstance(t, BinaryType):
        return pa.large_binary() if large else pa.binary()
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, UUIDType):
        return pa.uuid() if uuid_extension else pa.binary(16)
    return None


__all__ = ["UTC", "primitive_arrow_type"]
