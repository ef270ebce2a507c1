"""What table and view metadata updates share: the REST JSON form and four updates of both.

Iceberg's REST API has one vocabulary of metadata changes for tables (``TableUpdate``) and
views (``ViewUpdate``); ``upgrade-format-version``, ``set-location``, ``set-properties`` and
``remove-properties`` mean the same for both, so they are one class each here, usable in a
table's and a view's update list alike. Table-only updates live in ``firn.core.updates`` and
view-only ones in ``firn.views.updates``.

Every update is a frozen dataclass with an ``ACTION`` (the REST discriminator). Its JSON form
is derived from its fields: each field under its name with ``-`` for ``_`` (or the name in
``JSON_NAMES``), tuples as lists, mappings as string objects, UUIDs as text; an update whose
JSON is shaped differently overrides ``_fields``. Reading is strict (unknown actions and
fields are a ``ValidationError``) through :func:`read_update` and a table of readers.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from firn.errors import ValidationError
from firn.util.json_reader import JsonObjectReader

# A schema, spec, sort order or view version id of -1 means "the one added last in this change"
# (REST spec).
LAST_ADDED = -1


def _plain(value: object) -> object:
    """A field value as JSON: tuples as lists, mappings as string maps, UUIDs as text."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


class JsonFields:
    """The REST JSON fields of a dataclass: each field by its hyphenated name (or its name in
    ``JSON_NAMES``), values through :func:`_plain`."""

    __slots__ = ()
    JSON_NAMES: ClassVar[Mapping[str, str]] = {}

    def _fields(self) -> dict[str, Any]:
        names = self.JSON_NAMES
        return {
            names.get(f.name, f.name.replace("_", "-")): _plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }


class MetadataUpdate(JsonFields):
    """Base of metadata updates; ``ACTION`` is the REST ``action`` discriminator."""

    __slots__ = ()
    ACTION: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The REST update JSON object."""
        return {"action": self.ACTION, **self._fields()}


class TableUpdate(MetadataUpdate):
    """An update of table metadata (REST ``TableUpdate``)."""

    __slots__ = ()


class ViewUpdate(MetadataUpdate):
    """An update of view metadata (REST ``ViewUpdate``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion(TableUpdate, ViewUpdate):
    ACTION: ClassVar[str] = "upgrade-format-version"
    format_version: int


@dataclass(frozen=True, slots=True)
class SetLocation(TableUpdate, ViewUpdate):
    ACTION: ClassVar[str] = "set-location"
    location: str


@dataclass(frozen=True, slots=True)
class SetProperties(TableUpdate, ViewUpdate):
    ACTION: ClassVar[str] = "set-properties"
    updates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RemoveProperties(TableUpdate, ViewUpdate):
    ACTION: ClassVar[str] = "remove-properties"
    removals: tuple[str, ...] = ()


U = TypeVar("U")

# Readers of the updates above, for the table and the view reader tables.
SHARED_UPDATE_READERS: dict[str, Callable[[JsonObjectReader], MetadataUpdate]] = {
    UpgradeFormatVersion.ACTION: lambda r: UpgradeFormatVersion(r.get_int("format-version")),
    SetLocation.ACTION: lambda r: SetLocation(r.get_str("location")),
    SetProperties.ACTION: lambda r: SetProperties(r.str_map("updates")),
    RemoveProperties.ACTION: lambda r: RemoveProperties(tuple(r.get_list("removals", str))),
}


def read_tagged(
    data: Any, what: str, tag: str, readers: Mapping[str, Callable[[JsonObjectReader], U]], unknown: str
) -> U:
    """Read a JSON object whose ``tag`` field picks its reader in ``readers``; strict: an
    unknown tag (``"<unknown> <what> <tag> 'x'; known: ..."``) or a field the reader did not
    take is a ``ValidationError``."""
    r = JsonObjectReader(data, what, tag)
    kind = r.get_str(tag)
    r.what = f"{what} {kind!r}"
    read = readers.get(kind)
    if read is None:
        raise ValidationError(f"{unknown} {what} {tag} {kind!r}; known: {', '.join(sorted(readers))}")
    value = read(r)
    r.finish()
    return value


def parse_uuid(value: str, what: str) -> uuid.UUID:
    """``value`` as a UUID; ``ValidationError`` naming ``what`` when it is not one."""
    try:
        return uuid.UUID(value)
    except ValueError as e:
        raise ValidationError(f"{what}: {value!r} is not a UUID") from e


__all__ = [
    "LAST_ADDED",
    "SHARED_UPDATE_READERS",
    "JsonFields",
    "MetadataUpdate",
    "RemoveProperties",
    "SetLocation",
    "SetProperties",
    "TableUpdate",
    "UpgradeFormatVersion",
    "ViewUpdate",
    "parse_uuid",
    "read_tagged",
]
