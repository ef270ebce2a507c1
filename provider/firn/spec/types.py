"""Iceberg data types (spec: "Schemas and Data Types").

Types are immutable values: two ``DecimalType(9, 2)`` compare equal and hash alike. Primitive
types without parameters are singletons (``LongType() is LONG``), so identity checks are cheap
on hot paths. ``str(t)`` is the type's JSON spelling for primitives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from firn.errors import Unsupported, ValidationError
from firn.spec.versions import (
    MIN_FORMAT_VERSION_DATE_PROMOTION,
    MIN_FORMAT_VERSION_GEO_TYPES,
    MIN_FORMAT_VERSION_NANO_TIMESTAMPS,
    MIN_FORMAT_VERSION_UNKNOWN_TYPE,
    MIN_FORMAT_VERSION_VARIANT_TYPE,
)

# Spec: decimal precision must be 38 or less.
MAX_DECIMAL_PRECISION = 38


class IcebergType:
    """Base of every Iceberg type."""

    __slots__ = ()

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)


class PrimitiveType(IcebergType):
    """A primitive type. Subclasses without parameters are singletons."""

    __slots__ = ()
    type_string: ClassVar[str] = ""
    # Minimum table format version that may use this type.
    min_format_version: ClassVar[int] = 1

    def __str__(self) -> str:
        return self.type_string

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Singleton(PrimitiveType):
    __slots__ = ()
    _instances: ClassVar[dict[type, Any]] = {}

    def __new__(cls) -> Any:
        inst = _Singleton._instances.get(cls)
        if inst is None:
            inst = super().__new__(cls)
            _Singleton._instances[cls] = inst
        return inst

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.type_string)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())


class BooleanType(_Singleton):
    type_string = "boolean"


class IntegerType(_Singleton):
    type_string = "int"


class LongType(_Singleton):
    type_string = "long"


class FloatType(_Singleton):
    type_string = "float"


class DoubleType(_Singleton):
    type_string = "double"


class DateType(_Singleton):
    type_string = "date"


class TimeType(_Singleton):
    type_string = "time"


class TimestampType(_Singleton):
    type_string = "timestamp"


class TimestamptzType(_Singleton):
    type_string = "timestamptz"


class TimestampNanoType(_Singleton):
    type_string = "timestamp_ns"
    min_format_version = MIN_FORMAT_VERSION_NANO_TIMESTAMPS


class TimestamptzNanoType(_Singleton):
    type_string = "timestamptz_ns"
    min_format_version = MIN_FORMAT_VERSION_NANO_TIMESTAMPS


class StringType(_Singleton):
    type_string = "string"


class UUIDType(_Singleton):
    type_string = "uuid"


class BinaryType(_Singleton):
    type_string = "binary"


class UnknownType(_Singleton):
    """v3 ``unknown``: always null, never stored in data files."""

    type_string = "unknown"
    min_format_version = MIN_FORMAT_VERSION_UNKNOWN_TYPE


class VariantType(_Singleton):
    """v3 ``variant``: parsed so metadata round-trips; reading or writing values is unsupported."""

    type_string = "variant"
    min_format_version = MIN_FORMAT_VERSION_VARIANT_TYPE


@dataclass(frozen=True, slots=True)
class FixedType(PrimitiveType):
    length: int

    def __post_init__(self) -> None:
        if self.length <= 0:
            raise ValidationError(f"fixed length must be positive: {self.length}")

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


@dataclass(frozen=True, slots=True)
class DecimalType(PrimitiveType):
    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not 0 < self.precision <= MAX_DECIMAL_PRECISION:
            raise ValidationError(f"decimal precision must be in 1..38: {self.precision}")

    def __str__(self) -> str:
        # Java writes "decimal(P, S)"; readers must accept both spellings.
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True)
class GeometryType(PrimitiveType):
    """v3 ``geometry(C)``: parsed for metadata round-trips; values are unsupported."""

    crs: str = "OGC:CRS84"
    min_format_version: ClassVar[int] = MIN_FORMAT_VERSION_GEO_TYPES

    def __str__(self) -> str:
        return "geometry" if self.crs == "OGC:CRS84" else f"geometry({self.crs})"


@dataclass(frozen=True, slots=True)
class GeographyType(PrimitiveType):
    """v3 ``geography(C, A)``: parsed for metadata round-trips; values are unsupported."""

    crs: str = "OGC:CRS84"
    algorithm: str = "spherical"
    min_format_version: ClassVar[int] = MIN_FORMAT_VERSION_GEO_TYPES

    def __str__(self) -> str:
        if self.crs == "OGC:CRS84" and self.algorithm == "spherical":
            return "geography"
        return f"geography({self.crs}, {self.algorithm})"


BOOLEAN = BooleanType()
INT = IntegerType()
LONG = LongType()
FLOAT = FloatType()
DOUBLE = DoubleType()
DATE = DateType()
TIME = TimeType()
TIMESTAMP = TimestampType()
TIMESTAMPTZ = TimestamptzType()
TIMESTAMP_NS = TimestampNanoType()
TIMESTAMPTZ_NS = TimestamptzNanoType()
STRING = StringType()
UUID = UUIDType()
BINARY = BinaryType()
UNKNOWN = UnknownType()
VARIANT = VariantType()

_SIMPLE_TYPES: dict[str, PrimitiveType] = {
    t.type_string: t
    for t in (
        BOOLEAN,
        INT,
        LONG,
        FLOAT,
        DOUBLE,
        DATE,
        TIME,
        TIMESTAMP,
        TIMESTAMPTZ,
        TIMESTAMP_NS,
        TIMESTAMPTZ_NS,
        STRING,
        UUID,
        BINARY,
        UNKNOWN,
        VARIANT,
    )
}
_FIXED = re.compile(r"^fixed\[\s*(\d+)\s*\]$")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_GEOMETRY = re.compile(r"^geometry(?:\(\s*([^,()]+?)\s*\))?$")
_GEOGRAPHY = re.compile(r"^geography(?:\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\))?$")


def primitive_from_string(text: str) -> PrimitiveType:
    """Parse a primitive type's JSON spelling (``"long"``, ``"decimal(9, 2)"``, ``"fixed[16]"``)."""
    t = _SIMPLE_TYPES.get(text)
    if t is not None:
        return t
    if m := _FIXED.match(text):
        return FixedType(int(m.group(1)))
    if m := _DECIMAL.match(text):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _GEOMETRY.match(text):
        return GeometryType(m.group(1) or "OGC:CRS84")
    if m := _GEOGRAPHY.match(text):
        return GeographyType(m.group(1) or "OGC:CRS84", m.group(2) or "spherical")
    raise ValidationError(f"unknown Iceberg type: {text!r}")


class NestedType(IcebergType):
    """struct, list or map."""

    __slots__ = ()

    @property
    def fields(self) -> tuple[NestedField, ...]:
        raise NotImplementedError  # pragma: no cover - abstract


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, id'd field of a struct (or the element/key/value of a list/map)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    # Spec "Default values": JSON single-value forms are converted to Python values by the schema parser.
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        return not self.required

    def with_type(self, field_type: IcebergType) -> NestedField:
        return NestedField(
            self.field_id,
            self.name,
            field_type,
            self.required,
            self.doc,
            self.initial_default,
            self.write_default,
        )

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        return f"{self.field_id}: {self.name}: {req} {self.field_type}"


@dataclass(frozen=True)
class StructType(NestedType):
    field_list: tuple[NestedField, ...] = ()
    _by_id: dict[int, NestedField] = field(init=False, repr=False, compare=False, hash=False)
    _by_name: dict[str, NestedField] = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "field_list", tuple(fields))
        object.__setattr__(self, "_by_id", {f.field_id: f for f in fields})
        object.__setattr__(self, "_by_name", {f.name: f for f in fields})

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self.field_list

    def field(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def field_by_name(self, name: str) -> NestedField | None:
        return self._by_name.get(name)

    def __len__(self) -> int:
        return len(self.field_list)

    def __iter__(self) -> Any:
        return iter(self.field_list)

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.field_list) + ">"

    def __reduce__(self) -> tuple[Any, ...]:
        return (StructType, self.field_list)


@dataclass(frozen=True, slots=True)
class ListType(NestedType):
    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType(NestedType):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


def check_supported_for_values(t: IcebergType, what: str) -> None:
    """Raise :class:`Unsupported` for types whose values Firn cannot read or write."""
    if isinstance(t, VariantType | GeometryType | GeographyType):
        raise Unsupported(f"{what}: values of type {t} are not supported by Firn yet")


# Spec "Schema Evolution": valid primitive promotions.
def can_promote(source: IcebergType, target: IcebergType, format_version: int) -> bool:
    """Whether ``source`` may be promoted to ``target`` in a table of ``format_version``."""
    if source == target:
        return True
    if isinstance(source, UnknownType):
        return format_version >= MIN_FORMAT_VERSION_UNKNOWN_TYPE
    if isinstance(source, IntegerType):
        return isinstance(target, LongType)
    if isinstance(source, FloatType):
        return isinstance(target, DoubleType)
    if isinstance(source, DecimalType) and isinstance(target, DecimalType):
        return target.scale == source.scale and target.precision > source.precision
    if isinstance(source, DateType) and format_version >= MIN_FORMAT_VERSION_DATE_PROMOTION:
        return isinstance(target, TimestampType | TimestampNanoType)
    return False


__all__ = [
    "BINARY",
    "BOOLEAN",
    "DATE",
    "DOUBLE",
    "FLOAT",
    "INT",
    "LONG",
    "STRING",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMPTZ",
    "TIMESTAMPTZ_NS",
    "TIMESTAMP_NS",
    "UNKNOWN",
    "UUID",
    "VARIANT",
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "GeographyType",
    "GeometryType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNanoType",
    "TimestampType",
    "TimestamptzNanoType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "VariantType",
    "can_promote",
    "check_supported_for_values",
    "primitive_from_string",
]
