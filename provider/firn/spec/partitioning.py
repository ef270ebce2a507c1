"""Partition specs (spec: "Partitioning", "Partition Evolution", Appendix C "Partition Specs")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from firn.errors import ValidationError
from firn.spec.schema import Schema
from firn.spec.transforms import Transform, UnknownTransform, parse_transform
from firn.spec.types import IcebergType, NestedField, StructType

# Spec: v1 partition field ids were implicit, starting at 1000 in spec order.
PARTITION_FIELD_ID_START = 1000
# The id a table's first spec gets.
INITIAL_SPEC_ID = 0


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One field of a partition spec: ``transform(source)`` named ``name`` with id ``field_id``."""

    source_id: int
    field_id: int
    transform: Transform
    name: str
    # v3 multi-argument transforms; None for single-argument ones.
    source_ids: tuple[int, ...] | None = None

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


@dataclass(frozen=True, eq=False)
class PartitionSpec:
    """An ordered list of partition fields with a spec id."""

    spec_id: int = INITIAL_SPEC_ID
    fields: tuple[PartitionField, ...] = field(default=())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return self.spec_id == other.spec_id and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((self.spec_id, self.fields))

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields (ids, sources, transforms, names) ignoring the spec id."""
        return self.fields == other.fields

    @property
    def is_unpartitioned(self) -> bool:
        return all(f.transform.is_void for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_FIELD_ID_START - 1)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of transformed values, typed against ``schema`` (spec "Partitioning")."""
        out: list[NestedField] = []
        for pf in self.fields:
            src = schema.find_field_or_none(pf.source_id)
            if src is None:
                # A source column dropped from the schema: the value type is unknown; treat as
                # the transform's result over an unknown source only if the transform says so.
                raise ValidationError(
                    f"partition field {pf.name!r} references source id {pf.source_id}, "
                    f"which is not in schema {schema.schema_id}"
                )
            out.append(NestedField(pf.field_id, pf.name, pf.transform.result_type(src.field_type), False))
        return StructType(*out)

    @cached_property
    def source_ids(self) -> tuple[int, ...]:
        return tuple(f.source_id for f in self.fields)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def partition_path(self, values: Sequence[Any], schema: Schema) -> str:
        """Hive-style path of a partition tuple: ``region=eu/ts_day=2024-01-02``."""
        # Java and PyIceberg use URL form encoding (a space becomes "+").
        from urllib.parse import quote_plus

        parts = []
        for pf, value in zip(self.fields, values):
            src_type = schema.find_type(pf.source_id)
            text = "null" if value is None else pf.transform.to_human_string(src_type, value)
            parts.append(f"{quote_plus(pf.name)}={quote_plus(text)}")
        return "/".join(parts)

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNPARTITIONED = PartitionSpec(INITIAL_SPEC_ID, ())


def default_partition_field_name(transform: Transform, source_name: str) -> str:
    """The name Iceberg Java gives a partition field of ``transform`` on ``source_name``
    (``id_bucket_16``, ``ts_day``, ...)."""
    t = str(transform)
    if transform.is_identity:
        return source_name
    if t.startswith("bucket["):
        return f"{source_name}_bucket_{t[7:-1]}"
    if t.startswith("truncate["):
        return f"{source_name}_trunc_{t[9:-1]}"
    if t == "void":
        return f"{source_name}_null"
    return f"{source_name}_{t}"


PartitionFieldLike = PartitionField | tuple[str, str] | tuple[str, str, str]


def parse_known_transform(text: str) -> Transform:
    """:func:`parse_transform` for transforms a writer will apply: an unknown name (kept
    verbatim when read from metadata) is an error here, not a field that fails at write time."""
    transform = parse_transform(text)
    if isinstance(transform, UnknownTransform):
        raise ValidationError(
            f"unknown partition transform {text!r}; use identity, bucket[N], truncate[W], "
            "year, month, day, hour or void"
        )
    return transform


def build_partition_spec(
    schema: Schema,
    fields: Iterable[PartitionFieldLike],
    *,
    spec_id: int = INITIAL_SPEC_ID,
    last_partition_id: int = PARTITION_FIELD_ID_START - 1,
) -> PartitionSpec:
    """Build a spec from ``(source column, transform[, name])`` tuples or ``PartitionField``\\s.

    ``[("region", "identity"), ("ts", "day"), ("id", "bucket[4]")]`` gives fields
    ``region``, ``ts_day`` and ``id_bucket_4`` with ids from ``last_partition_id + 1``.
    """
    out: list[PartitionField] = []
    next_id = last_partition_id
    names: set[str] = set()
    for item in fields:
        if isinstance(item, PartitionField):
            pf = item
        else:
            if len(item) not in (2, 3):
                raise ValidationError(f"partition field must be (column, transform[, name]), got {item!r}")
            column, transform_text = item[0], item[1]
            src = schema.find_field_or_none(column)
            if src is None:
                raise ValidationError(
                    f"cannot partition by unknown column {column!r}; columns are {schema.column_names}"
                )
            transform = parse_known_transform(transform_text)
            if not transform.can_transform(src.field_type):
                raise ValidationError(
                    f"transform {transform} cannot be applied to {column!r} of type {src.field_type}"
                )
            next_id += 1
            name = item[2] if len(item) == 3 else default_partition_field_name(transform, column)
            pf = PartitionField(src.field_id, next_id, transform, name)
        if pf.name in names:
            raise ValidationError(f"duplicate partition field name {pf.name!r}")
        names.add(pf.name)
        out.append(pf)
    spec = PartitionSpec(spec_id, tuple(out))
    validate_spec(spec, schema)
    return spec


def validate_spec(spec: PartitionSpec, schema: Schema) -> None:
    """Check sources exist and transforms accept their types; names must not shadow other columns."""
    seen: set[tuple[int, str]] = set()
    for pf in spec.fields:
        src = schema.find_field_or_none(pf.source_id)
        if src is None:
            raise ValidationError(
                f"partition field {pf.name!r}: source id {pf.source_id} is not in the schema"
            )
        if not isinstance(src.field_type, IcebergType) or not src.field_type.is_primitive:
            raise ValidationError(f"partition field {pf.name!r}: source {src.name!r} must be a primitive")
        if not pf.transform.can_transform(src.field_type):
            raise ValidationError(
                f"partition field {pf.name!r}: transform {pf.transform} cannot apply to {src.field_type}"
            )
        key = (pf.source_id, str(pf.transform))
        if key in seen and not pf.transform.is_void:
            raise ValidationError(f"partition field {pf.name!r} duplicates {pf.transform} of {src.name!r}")
        seen.add(key)
        other = schema.find_field_or_none(pf.name)
        # A name may repeat its own source column for identity, and for void: v1 keeps a
        # removed field as void under its old name (Java's add path checks only the source).
        same_source = other is not None and other.field_id == pf.source_id
        if other is not None and not ((pf.transform.is_identity or pf.transform.is_void) and same_source):
            raise ValidationError(
                f"partition field name {pf.name!r} conflicts with schema column {other.name!r}"
            )


__all__ = [
    "INITIAL_SPEC_ID",
    "PARTITION_FIELD_ID_START",
    "UNPARTITIONED",
    "PartitionField",
    "PartitionSpec",
    "build_partition_spec",
    "default_partition_field_name",
    "parse_known_transform",
    "parse_transform",
    "validate_spec",
]
