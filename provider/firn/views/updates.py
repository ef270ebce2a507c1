"""View metadata updates: the vocabulary of Iceberg's REST ``commitView`` API.

:class:`~firn.views.builder.ViewMetadataBuilder` records one of these for every change it
makes (STYLE 5: a no-op records nothing), and :func:`~firn.views.builder.apply_view_updates`
replays a list of them on a base. ``-1`` as a schema or version id means "the one added last
in this change", as in the REST spec.

Each update has its REST JSON form (OpenAPI ``ViewUpdate``): ``to_json()`` writes it and
:func:`view_update_from_json` reads it strictly (unknown actions and fields are a
``ValidationError``). :class:`AssertViewUUID` is the spec's one ``ViewRequirement``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from firn.errors import CommitConflict, ValidationError
from firn.spec.metadata_updates import (
    LAST_ADDED,
    SHARED_UPDATE_READERS,
    RemoveProperties,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
    ViewUpdate,
    read_tagged,
)
from firn.spec.schema_json import schema_from_json
from firn.spec.view_metadata_json import version_from_dict, version_to_dict, view_schema_to_dict
from firn.util.json_reader import JsonObjectReader

if TYPE_CHECKING:
    from firn.spec.schema import Schema
    from firn.spec.view_metadata import ViewMetadata, ViewVersion


@dataclass(frozen=True, slots=True)
class AssignViewUUID(ViewUpdate):
    ACTION: ClassVar[str] = "assign-uuid"
    uuid: str


@dataclass(frozen=True, slots=True)
class AddViewSchema(ViewUpdate):
    ACTION: ClassVar[str] = "add-schema"
    schema: Schema

    def _fields(self) -> dict[str, Any]:
        return {"schema": view_schema_to_dict(self.schema)}


@dataclass(frozen=True, slots=True)
class AddViewVersion(ViewUpdate):
    ACTION: ClassVar[str] = "add-view-version"
    version: ViewVersion

    def _fields(self) -> dict[str, Any]:
        return {"view-version": version_to_dict(self.version)}


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion(ViewUpdate):
    ACTION: ClassVar[str] = "set-current-view-version"
    JSON_NAMES: ClassVar[Mapping[str, str]] = {"version_id": "view-version-id"}
    version_id: int


def _add_schema(r: JsonObjectReader) -> AddViewSchema:
    schema: Schema = r.nested("schema", schema_from_json)
    r.opt_int("last-column-id")  # deprecated and meaningless for views; accepted, not used
    return AddViewSchema(schema)


_VIEW_UPDATE_READERS: dict[str, Callable[[JsonObjectReader], ViewUpdate]] = {
    **SHARED_UPDATE_READERS,  # type: ignore[dict-item]
    AssignViewUUID.ACTION: lambda r: AssignViewUUID(r.get_str("uuid")),
    AddViewSchema.ACTION: _add_schema,
    AddViewVersion.ACTION: lambda r: AddViewVersion(r.nested("view-version", version_from_dict)),
    SetCurrentViewVersion.ACTION: lambda r: SetCurrentViewVersion(r.get_int("view-version-id")),
}


def view_update_from_json(data: Any) -> ViewUpdate:
    """A REST ``ViewUpdate`` object; ``ValidationError`` names what is wrong with it."""
    return read_tagged(data, "view update", "action", _VIEW_UPDATE_READERS, "unknown")


@dataclass(frozen=True, slots=True)
class AssertViewUUID:
    """The view's UUID must be ``uuid`` (REST ``assert-view-uuid``): the change was made for
    this view, not one dropped and re-created under its name."""

    TYPE: ClassVar[str] = "assert-view-uuid"
    uuid: str

    def validate(self, current: ViewMetadata) -> None:
        if current.view_uuid != self.uuid:
            raise CommitConflict(
                f"commit requirement failed: view UUID is {current.view_uuid}, expected {self.uuid} "
                "(the view was dropped and re-created)"
            )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "uuid": self.uuid}

    @classmethod
    def from_json(cls, data: Any) -> AssertViewUUID:
        """Read a REST ``ViewRequirement`` (the spec defines only this one)."""
        r = JsonObjectReader(data, "view requirement", "type")
        kind = r.get_str("type")
        if kind != cls.TYPE:
            raise ValidationError(f"unknown view requirement type {kind!r}; known: {cls.TYPE}")
        requirement = cls(r.get_str("uuid"))
        r.finish()
        return requirement


__all__ = [
    "LAST_ADDED",
    "AddViewSchema",
    "AddViewVersion",
    "AssertViewUUID",
    "AssignViewUUID",
    "RemoveProperties",
    "SetCurrentViewVersion",
    "SetLocation",
    "SetProperties",
    "UpgradeFormatVersion",
    "ViewUpdate",
    "view_update_from_json",
]
