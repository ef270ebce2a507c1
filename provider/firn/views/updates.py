"""View metadata updates: the vocabulary of Iceberg's REST ``commitView`` API.

:class:`~firn.views.builder.ViewMetadataBuilder` records one of these for every change it
makes (STYLE 5: a no-op records nothing), and :func:`~firn.views.builder.apply_view_updates`
replays a list of them on a base. ``-1`` as a schema or version id means "the one added last
in this change", as in the REST spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from firn.spec.schema import Schema
    from firn.spec.view_metadata import ViewVersion

LAST_ADDED = -1


class ViewUpdate:
    """Base of view metadata updates."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class AssignViewUUID(ViewUpdate):
    uuid: str


@dataclass(frozen=True, slots=True)
class UpgradeViewFormatVersion(ViewUpdate):
    format_version: int


@dataclass(frozen=True, slots=True)
class AddViewSchema(ViewUpdate):
    schema: Schema


@dataclass(frozen=True, slots=True)
class SetViewLocation(ViewUpdate):
    location: str


@dataclass(frozen=True, slots=True)
class SetViewProperties(ViewUpdate):
    updates: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class RemoveViewProperties(ViewUpdate):
    removals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AddViewVersion(ViewUpdate):
    version: ViewVersion


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion(ViewUpdate):
    version_id: int


__all__ = [
    "LAST_ADDED",
    "AddViewSchema",
    "AddViewVersion",
    "AssignViewUUID",
    "RemoveViewProperties",
    "SetCurrentViewVersion",
    "SetViewLocation",
    "SetViewProperties",
    "UpgradeViewFormatVersion",
    "ViewUpdate",
]
