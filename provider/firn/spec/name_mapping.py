"""Name mappings (spec: "Column Projection" and Appendix C "Name Mapping Serialization").

A name mapping gives fallback field ids to columns of data files written without Iceberg field
ids (imported Hive/Parquet files). It is stored as JSON in the table property
``schema.name-mapping.default``. Lookups go by *name path*: each level matches one of a mapped
field's ``names``; a name containing ``.`` is a literal name, never a nested path (spec).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from firn.errors import ValidationError
from firn.spec.schema import Schema
from firn.spec.types import IcebergType, ListType, MapType, NestedField, StructType

# Appendix C key names.
NAMES_KEY = "names"
FIELD_ID_KEY = "field-id"
FIELDS_KEY = "fields"

# Spec "Column Projection": lists map their element as "element", maps as "key" and "value".
LIST_ELEMENT_NAME = "element"
MAP_KEY_NAME = "key"
MAP_VALUE_NAME = "value"


def _index(fields: Sequence[MappedField], where: str) -> dict[str, MappedField]:
    out: dict[str, MappedField] = {}
    for f in fields:
        for name in f.names:
            if name in out:
                raise ValidationError(f"name mapping{where}: name {name!r} is mapped more than once")
            out[name] = f
    return out


@dataclass(frozen=True, eq=True)
class MappedField:
    """One field mapping: the names a column may have in data files, its id, and its children."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = ()
    _by_name: dict[str, MappedField] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_by_name", _index(self.fields, f" under {list(self.names)}"))

    def child(self, name: str) -> MappedField | None:
        """The child mapping that lists ``name`` among its names, or None."""
        return self._by_name.get(name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {NAMES_KEY: list(self.names)}
        if self.field_id is not None:
            out[FIELD_ID_KEY] = self.field_id
        if self.fields:
            out[FIELDS_KEY] = [f.to_dict() for f in self.fields]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MappedField:
        if not isinstance(data, Mapping):
            raise ValidationError(f"name mapping: a field mapping must be a JSON object, got {data!r}")
        names = data.get(NAMES_KEY)
        if names is None:
            # Spec: "names" is required; Java tolerates a missing list as empty.
            names = []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValidationError(f"name mapping: 'names' must be a list of strings, got {names!r}")
        fid = data.get(FIELD_ID_KEY)
        if fid is not None and (not isinstance(fid, int) or isinstance(fid, bool)):
            raise ValidationError(f"name mapping: 'field-id' must be an integer, got {fid!r}")
        children = data.get(FIELDS_KEY)
        if children is None:
            children = []
        if not isinstance(children, list):
            raise ValidationError(f"name mapping: 'fields' must be a list, got {children!r}")
        return cls(tuple(names), fid, tuple(cls.from_dict(c) for c in children))


@dataclass(frozen=True, eq=True)
class NameMapping:
    """A list of top-level field mappings with lookups by name path and by field id."""

    fields: tuple[MappedField, ...]
    _by_name: dict[str, MappedField] = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, fields: Iterable[MappedField]) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "_by_name", _index(self.fields, ""))

    def __iter__(self) -> Iterator[MappedField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def child(self, name: str) -> MappedField | None:
        """The top-level mapping that lists ``name``, or None."""
        return self._by_name.get(name)

    def find(self, path: Sequence[str]) -> MappedField | None:
        """The mapping for a name path (``["location", "lat"]``), or None if any level is unmapped."""
        if not path:
            return None
        cur = self._by_name.get(path[0])
        for name in path[1:]:
            if cur is None:
                return None
            cur = cur.child(name)
        return cur

    def id_for(self, path: Sequence[str]) -> int | None:
        """The field id mapped for a name path, or None."""
        found = self.find(path)
        return found.field_id if found is not None else None

    @cached_property
    def _by_id(self) -> dict[int, MappedField]:
        out: dict[int, MappedField] = {}

        def visit(fields: Sequence[MappedField]) -> None:
            for f in fields:
                if f.field_id is not None:
                    out[f.field_id] = f
                visit(f.fields)

        visit(self.fields)
        return out

    def find_by_id(self, field_id: int) -> MappedField | None:
        return self._by_id.get(field_id)

    # -- serde (Appendix C) -----------------------------------------------------------------
    def to_list(self) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.fields]

    def to_json(self) -> str:
        return json.dumps(self.to_list(), separators=(",", ":"))

    @classmethod
    def from_list(cls, data: Any) -> NameMapping:
        if not isinstance(data, list):
            raise ValidationError(
                f"name mapping must be a JSON list of field mappings, got {type(data).__name__}"
            )
        return cls(MappedField.from_dict(d) for d in data)


def parse_name_mapping(text: str) -> NameMapping:
    """Parse Appendix C JSON (the ``schema.name-mapping.default`` property value)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValidationError(f"name mapping is not valid JSON: {e}") from e
    return NameMapping.from_list(data)


def _mapped_children(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, StructType):
        return tuple(_mapped_field(f) for f in t.fields)
    if isinstance(t, ListType):
        return (MappedField((LIST_ELEMENT_NAME,), t.element_id, _mapped_children(t.element_type)),)
    if isinstance(t, MapType):
        return (
            MappedField((MAP_KEY_NAME,), t.key_id, _mapped_children(t.key_type)),
            MappedField((MAP_VALUE_NAME,), t.value_id, _mapped_children(t.value_type)),
        )
    return ()


def _mapped_field(f: NestedField) -> MappedField:
    return MappedField((f.name,), f.field_id, _mapped_children(f.field_type))


def create_mapping_from_schema(schema: Schema) -> NameMapping:
    """A mapping that maps every field's current name to its id (Java ``MappingUtil.create``)."""
    return NameMapping(_mapped_field(f) for f in schema.fields)


__all__ = [
    "LIST_ELEMENT_NAME",
    "MAP_KEY_NAME",
    "MAP_VALUE_NAME",
    "MappedField",
    "NameMapping",
    "create_mapping_from_schema",
    "parse_name_mapping",
]
