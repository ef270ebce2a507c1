"""Table schemas (spec: "Schemas and Data Types", "Identifier Field IDs", "Reserved Field IDs").

A :class:`Schema` is an immutable struct with a schema id and identifier field ids. Indexes
(by id, by full dotted name, parents) are built lazily once per schema object and shared by
every reader of that object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from firn.errors import ValidationError
from firn.spec.field_ids import MAX_TABLE_FIELD_ID
from firn.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
    UnknownType,
)

INITIAL_SCHEMA_ID = 0


@dataclass(frozen=True, eq=False)
class Schema:
    """An Iceberg schema: top-level fields, a schema id and identifier field ids."""

    fields: tuple[NestedField, ...]
    schema_id: int = INITIAL_SCHEMA_ID
    identifier_field_ids: tuple[int, ...] = ()
    _struct: StructType = field(init=False, repr=False)

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = INITIAL_SCHEMA_ID,
        identifier_field_ids: Iterable[int] = (),
    ) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))
        object.__setattr__(self, "_struct", StructType(*fields))

    # -- equality: schemas are equal when their structure and identifier ids are (not their id)
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._struct == other._struct and set(self.identifier_field_ids) == set(
            other.identifier_field_ids
        )

    def __hash__(self) -> int:
        return hash((self._struct, frozenset(self.identifier_field_ids)))

    def same_structure(self, other: Schema) -> bool:
        return self == other

    def __str__(self) -> str:
        return "table {\n" + "\n".join(f"  {f}" for f in self.fields) + "\n}"

    def __repr__(self) -> str:
        return f"Schema(schema_id={self.schema_id}, fields={list(self.fields)!r})"

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def as_struct(self) -> StructType:
        return self._struct

    def with_schema_id(self, schema_id: int) -> Schema:
        return Schema(*self.fields, schema_id=schema_id, identifier_field_ids=self.identifier_field_ids)

    # -- indexes -----------------------------------------------------------------------------
    @cached_property
    def _index(self) -> tuple[dict[int, NestedField], dict[str, int], dict[int, int]]:
        by_id: dict[int, NestedField] = {}
        by_name: dict[str, int] = {}
        parents: dict[int, int] = {}

        def visit(fields: Sequence[NestedField], prefix: str, parent: int | None) -> None:
            for f in fields:
                if f.field_id in by_id:
                    raise ValidationError(f"schema has duplicate field id {f.field_id}")
                by_id[f.field_id] = f
                name = f"{prefix}{f.name}"
                by_name[name] = f.field_id
                if parent is not None:
                    parents[f.field_id] = parent
                t = f.field_type
                if isinstance(t, StructType):
                    visit(t.fields, name + ".", f.field_id)
                elif isinstance(t, ListType):
                    visit([t.element_field], name + ".", f.field_id)
                elif isinstance(t, MapType):
                    visit([t.key_field, t.value_field], name + ".", f.field_id)

        visit(self.fields, "", None)
        return by_id, by_name, parents

    @cached_property
    def _lower_name_index(self) -> dict[str, int]:
        return {k.lower(): v for k, v in self._index[1].items()}

    @cached_property
    def _id_to_name(self) -> dict[int, str]:
        return {v: k for k, v in self._index[1].items()}

    def find_field(self, name_or_id: str | int, *, case_sensitive: bool = True) -> NestedField:
        """Find a (possibly nested) field by id or dotted name; raises ``ValidationError`` if absent."""
        found = self.find_field_or_none(name_or_id, case_sensitive=case_sensitive)
        if found is None:
            raise ValidationError(f"no field {name_or_id!r} in schema {self.schema_id}: {self.column_names}")
        return found

    def find_field_or_none(self, name_or_id: str | int, *, case_sensitive: bool = True) -> NestedField | None:
        by_id, by_name, _ = self._index
        if isinstance(name_or_id, int):
            return by_id.get(name_or_id)
        fid = by_name.get(name_or_id) if case_sensitive else self._lower_name_index.get(name_or_id.lower())
        return by_id.get(fid) if fid is not None else None

    def find_type(self, name_or_id: str | int) -> IcebergType:
        return self.find_field(name_or_id).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted name of a field id, or None."""
        return self._id_to_name.get(field_id)

    def parent_id(self, field_id: int) -> int | None:
        return self._index[2].get(field_id)

    @property
    def field_ids(self) -> set[int]:
        return set(self._index[0])

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @cached_property
    def highest_field_id(self) -> int:
        return max(self._index[0], default=0)

    def primitive_fields(self) -> list[NestedField]:
        """Every primitive field, depth first (including list elements and map keys/values)."""
        return [f for f in self._index[0].values() if isinstance(f.field_type, PrimitiveType)]

    @property
    def identifier_field_names(self) -> list[str]:
        return [self._id_to_name[i] for i in self.identifier_field_ids if i in self._id_to_name]

    # -- projection ----------------------------------------------------------------------------
    def select(self, names: Iterable[str], *, case_sensitive: bool = True) -> Schema:
        """Project onto the named columns (dotted names select nested struct fields)."""
        ids: set[int] = set()
        for name in names:
            f = self.find_field_or_none(name, case_sensitive=case_sensitive)
            if f is None:
                raise ValidationError(
                    f"cannot select unknown column {name!r}; columns are {self.column_names}"
                )
            ids.add(f.field_id)
        return self.select_ids(ids)

    def select_ids(self, ids: set[int]) -> Schema:
        """Project onto field ids, keeping the ancestors of each selected field."""
        keep: set[int] = set()
        for fid in ids:
            cur: int | None = fid
            while cur is not None:
                keep.add(cur)
                cur = self.parent_id(cur)

        def prune(t: IcebergType, selected_whole: bool) -> IcebergType:
            if selected_whole or not isinstance(t, StructType):
                return t
            return StructType(
                *(f.with_type(prune(f.field_type, f.field_id in ids)) for f in t.fields if f.field_id in keep)
            )

        fields = [
            f.with_type(prune(f.field_type, f.field_id in ids)) for f in self.fields if f.field_id in keep
        ]
        return Schema(
            *fields,
            schema_id=self.schema_id,
            identifier_field_ids=[i for i in self.identifier_field_ids if i in keep],
        )

    # -- validation ------------------------------------------------------------------------------
    def validate(self, format_version: int) -> None:
        """Check the rules a table schema must obey; raises ``ValidationError``."""
        by_id, _, _ = self._index
        for fid, f in by_id.items():
            if fid < 0 or fid > MAX_TABLE_FIELD_ID:
                raise ValidationError(
                    f"field {f.name!r} has id {fid}; table field ids must be in 0..{MAX_TABLE_FIELD_ID} "
                    "(ids above are reserved for metadata columns)"
                )
            t = f.field_type
            if isinstance(t, PrimitiveType) and t.min_format_version > format_version:
                raise ValidationError(
                    f"field {f.name!r} has type {t}, which needs format version "
                    f"{t.min_format_version} (table is v{format_version})"
                )
            if isinstance(t, UnknownType) and f.required:
                raise ValidationError(f"field {f.name!r} of type unknown must be optional")
        for fid in self.identifier_field_ids:
            self._validate_identifier(fid)

    def _validate_identifier(self, fid: int) -> None:
        f = self.find_field_or_none(fid)
        if f is None:
            raise ValidationError(f"identifier field id {fid} is not in the schema")
        if not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(f"identifier field {f.name!r} must be a primitive, not {f.field_type}")
        if isinstance(f.field_type, FloatType | DoubleType):
            raise ValidationError(f"identifier field {f.name!r} cannot be a float or double")
        if not f.required:
            raise ValidationError(f"identifier field {f.name!r} must be required")
        cur = self.parent_id(fid)
        while cur is not None:
            parent = self.find_field(cur)
            if not isinstance(parent.field_type, StructType):
                raise ValidationError(f"identifier field {f.name!r} cannot be nested in a list or map")
            if not parent.required:
                raise ValidationError(
                    f"identifier field {f.name!r} is nested in optional struct {parent.name!r}"
                )
            cur = self.parent_id(cur)


def assign_fresh_ids(schema: Schema, start: int = 1) -> tuple[Schema, int]:
    """Renumber every field id depth-first-by-level from ``start`` (as Java does on create).

    Returns the new schema and the last assigned id. Identifier field ids are remapped.
    """
    counter = [start - 1]
    mapping: dict[int, int] = {}

    def next_id(old: int) -> int:
        counter[0] += 1
        mapping[old] = counter[0]
        return counter[0]

    def reassign_type(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            new_ids = [next_id(f.field_id) for f in t.fields]
            return StructType(
                *(
                    NestedField(
                        nid,
                        f.name,
                        reassign_type(f.field_type),
                        f.required,
                        f.doc,
                        f.initial_default,
                        f.write_default,
                    )
                    for nid, f in zip(new_ids, t.fields)
                )
            )
        if isinstance(t, ListType):
            eid = next_id(t.element_id)
            return ListType(eid, reassign_type(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid = next_id(t.key_id)
            vid = next_id(t.value_id)
            return MapType(kid, reassign_type(t.key_type), vid, reassign_type(t.value_type), t.value_required)
        return t

    struct = reassign_type(schema.as_struct())
    assert isinstance(struct, StructType)
    ident = [mapping[i] for i in schema.identifier_field_ids if i in mapping]
    return Schema(*struct.fields, schema_id=schema.schema_id, identifier_field_ids=ident), counter[0]


def visit_fields(t: IcebergType) -> Iterator[NestedField]:
    """Every nested field under a type, depth first."""
    if isinstance(t, NestedType):
        for f in t.fields:
            yield f
            yield from visit_fields(f.field_type)


__all__ = ["INITIAL_SCHEMA_ID", "Schema", "assign_fresh_ids", "visit_fields"]
