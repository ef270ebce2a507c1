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
from firn.spec.schema_json import schema_from_json
from firn.spec.view_metadata_json import version_from_dict, version_to_dict, view_schema_to_dict
from firn.util.json_reader import JsonObjectReader

if TYPE_CHECKING:
    from firn.spec.schema import Schema
    from firn.spec.view_metadata import ViewMetadata, ViewVersion

LAST_ADDED = -1


class ViewUpdate:
    """Base of view metadata updates; ``ACTION`` is the REST ``action`` discriminator."""

    __slots__ = ()
    ACTION: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The REST ``ViewUpdate`` JSON object."""
        return {"action": self.ACTION, **self._fields()}

    def _fields(self) -> dict[str, Any]:
        raise NotImplementedError  # pragma: no cover - every update defines its fields


@dataclass(frozen=True, slots=True)
class AssignViewUUID(ViewUpdate):
    ACTION: ClassVar[str] = "assign-uuid"
    uuid: str

    def _fields(self) -> dict[str, Any]:
        return {"uuid": self.uuid}


@dataclass(frozen=True, slots=True)
class UpgradeViewFormatVersion(ViewUpdate):
    ACTION: ClassVar[str] = "upgrade-format-version"
    format_version: int

    def _fields(self) -> dict[str, Any]:
        return {"format-version": self.format_version}


@dataclass(frozen=True, slots=True)
class AddViewSchema(ViewUpdate):
    ACTION: ClassVar[str] = "add-schema"
    schema: Schema

    def _fields(self) -> dict[str, Any]:
        return {"schema": view_schema_to_dict(self.schema)}


@dataclass(frozen=True, slots=True)
class SetViewLocation(ViewUpdate):
    ACTION: ClassVar[str] = "set-location"
    location: str

    def _fields(self) -> dict[str, Any]:
        return {"location": self.location}


@dataclass(frozen=True, slots=True)
class SetViewProperties(ViewUpdate):
    ACTION: ClassVar[str] = "set-properties"
    updates: Mapping[str, str]

    def _fields(self) -> dict[str, Any]:
        return {"updates": dict(self.updates)}


@dataclass(frozen=True, slots=True)
class RemoveViewProperties(ViewUpdate):
    ACTION: ClassVar[str] = "remove-properties"
    removals: tuple[str, ...]

    def _fields(self) -> dict[str, Any]:
        return {"removals": list(self.removals)}


@dataclass(frozen=True, slots=True)
class AddViewVersion(ViewUpdate):
    ACTION: ClassVar[str] = "add-view-version"
    version: ViewVersion

    def _fields(self) -> dict[str, Any]:
        return {"view-version": version_to_dict(self.version)}


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion(ViewUpdate):
    ACTION: ClassVar[str] = "set-current-view-version"
    version_id: int

    def _fields(self) -> dict[str, Any]:
        return {"view-version-id": self.version_id}


def _add_schema(r: JsonObjectReader) -> AddViewSchema:
    schema: Schema = r.nested("schema", schema_from_json)
    r.opt_int("last-column-id")  # deprecated and meaningless for views; accepted, not used
    return AddViewSchema(schema)


_VIEW_UPDATE_READERS: dict[str, Callable[[JsonObjectReader], ViewUpdate]] = {
    AssignViewUUID.ACTION: lambda r: AssignViewUUID(r.get_str("uuid")),
    UpgradeViewFormatVersion.ACTION: lambda r: UpgradeViewFormatVersion(r.get_int("format-version")),
    AddViewSchema.ACTION: _add_schema,
    SetViewLocation.ACTION: lambda r: SetViewLocation(r.get_str("location")),
    SetViewProperties.ACTION: lambda r: SetViewProperties(r.str_map("updates")),
    RemoveViewProperties.ACTION: lambda r: RemoveViewProperties(r.get_list("removals", str)),
    AddViewVersion.ACTION: lambda r: AddViewVersion(r.nested("view-version", version_from_dict)),
    SetCurrentViewVersion.ACTION: lambda r: SetCurrentViewVersion(r.get_int("view-version-id")),
}


def view_update_from_json(data: Any) -> ViewUpdate:
    """A REST ``ViewUpdate`` object; ``ValidationError`` names what is wrong with it."""
    r = JsonObjectReader(data, "view update", "action")
    action = r.get_str("action")
    r.what = f"view update {action!r}"
    read = _VIEW_UPDATE_READERS.get(action)
    if read is None:
        raise ValidationError(
            f"unknown view update action {action!r}; known: {', '.join(sorted(_VIEW_UPDATE_READERS))}"
        )
    update = read(r)
    r.finish()
    return update


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
    "RemoveViewProperties",
    "SetCurrentViewVersion",
    "SetViewLocation",
    "SetViewProperties",
    "UpgradeViewFormatVersion",
    "ViewUpdate",
    "view_update_from_json",
]
