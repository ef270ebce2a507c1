"""The REST catalog client's view operations (spec ``createView`` ... ``renameView``).

The methods and their rules are those of the SQL catalog's views
(:class:`~firn.catalog.views.ViewCatalogMixin`). A change to an existing view (replace,
rollback, properties) is computed here on the view's current metadata with the same builder,
then sent as its updates with ``assert-view-uuid`` (spec ``replaceView``); the server replays
them on its current metadata. A 409 means another writer changed the view first: the change
is computed again on the new metadata and re-sent, up to ``commit.retry.num-retries`` times.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from firn.catalog.base import Identifier, IdentifierLike
from firn.catalog.rest import protocol as p
from firn.catalog.rest.base import RestCatalogBase, response_object, string_map
from firn.catalog.rest.http import Route
from firn.core.create import SchemaLike, to_firn_schema
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    FirnError,
    InvalidMetadata,
    NoSuchNamespace,
    NoSuchView,
    Unsupported,
    ValidationConflict,
)
from firn.spec.locations import normalize_location
from firn.spec.view_metadata import ViewMetadata
from firn.spec.view_metadata_json import version_to_dict, view_metadata_from_dict, view_schema_to_dict
from firn.views.builder import (
    DEFAULT_DIALECT,
    ViewChange,
    new_view_metadata,
    replace_view_version,
    rollback_view_version,
    sql_representations,
    update_view_properties,
)
from firn.views.updates import AssertViewUUID
from firn.views.view import View

_VIEW = Route(not_found=NoSuchView, conflict=AlreadyExists)
_CREATE_VIEW = Route(not_found=NoSuchNamespace, conflict=AlreadyExists)
_LIST_VIEWS = Route(not_found=NoSuchNamespace, conflict=AlreadyExists)
_COMMIT_VIEW = Route(not_found=NoSuchView, conflict=CommitConflict, commit=True)
_UNPLACED = "rest:unplaced"


class RestViewOperations(RestCatalogBase):
    """View operations over REST; mixed into :class:`~firn.catalog.rest.RestCatalog`."""

    def create_view(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        sql: str | Mapping[str, str],
        dialect: str = DEFAULT_DIALECT,
        *,
        default_namespace: IdentifierLike | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """Create a view (version 1), as :meth:`SqlCatalog.create_view
        <firn.catalog.views.ViewCatalogMixin.create_view>` does; the server places it unless
        ``location`` is given."""
        ns, name = self._split(identifier)
        self._require("POST", p.VIEWS, f"create view {self._fmt(ns, name)!r}")
        draft = new_view_metadata(
            to_firn_schema(schema),
            sql_representations(sql, dialect),
            location=_UNPLACED,
            default_namespace=self._namespace(default_namespace) if default_namespace is not None else ns,
            default_catalog=default_catalog,
            properties=properties,
            summary=summary,
        )
        body: dict[str, Any] = {
            "name": name,
            "schema": view_schema_to_dict(draft.schema()),
            "view-version": version_to_dict(draft.current_version),
            "properties": dict(draft.properties),
        }
        if location:
            body["location"] = normalize_location(location, what=f"location of view {self._fmt(ns, name)!r}")
        what = f"create view {self._fmt(ns, name)!r}"
        response = self._call("POST", self._path(p.VIEWS, ns), what=what, route=_CREATE_VIEW, body=body)
        return self._view_from(ns, name, response_object(response, what), what)

    def load_view(self, identifier: IdentifierLike) -> View:
        """Load a view; ``NoSuchView`` if there is none (also when the name is a table's)."""
        ns, name = self._split(identifier)
        what = f"load view {self._fmt(ns, name)!r}"
        self._require("GET", p.VIEW, what)
        response = self._call("GET", self._path(p.VIEW, ns, view=name), what=what, route=_VIEW)
        return self._view_from(ns, name, response_object(response, what), what)

    def view_exists(self, identifier: IdentifierLike) -> bool:
        ns, name = self._split(identifier)
        what = f"check view {self._fmt(ns, name)!r}"
        method = "HEAD" if self._supports("HEAD", p.VIEW) else "GET"
        self._require(method, p.VIEW, what)
        try:
            self._call(method, self._path(p.VIEW, ns, view=name), what=what, route=_VIEW)
        except NoSuchView:
            return False
        return True

    def list_views(self, namespace: IdentifierLike) -> list[Identifier]:
        """The views directly in ``namespace`` (tables are not listed)."""
        ns = self._namespace(namespace)
        what = f"list views of namespace {self._fmt(ns)!r}"
        self._require("GET", p.VIEWS, what)
        out: list[Identifier] = []
        for item in self._pages(self._path(p.VIEWS, ns), "identifiers", what, _LIST_VIEWS, {}):
            ns_value = item.get("namespace") if isinstance(item, Mapping) else None
            name = item.get("name") if isinstance(item, Mapping) else None
            if not isinstance(ns_value, list) or not isinstance(name, str):
                raise FirnError(f"{what}: invalid identifier {item!r}")
            out.append((*map(str, ns_value), name))
        return out

    def load_view_metadata_location(self, identifier: IdentifierLike) -> str:
        """The view's current metadata file, as ``loadView`` reports it."""
        return self.load_view(identifier).metadata_location

    def register_view(self, identifier: IdentifierLike, metadata_location: str) -> View:
        """Add an existing view by its metadata file (spec ``registerView``)."""
        ns, name = self._split(identifier)
        what = f"register view {self._fmt(ns, name)!r}"
        self._require("POST", p.REGISTER_VIEW, what)
        body = {"name": name, "metadata-location": metadata_location}
        response = self._call(
            "POST", self._path(p.REGISTER_VIEW, ns), what=what, route=_CREATE_VIEW, body=body
        )
        return self._view_from(ns, name, response_object(response, what), what)

    # -- changes -------------------------------------------------------------------------------
    def replace_view(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        sql: str | Mapping[str, str],
        dialect: str = DEFAULT_DIALECT,
        *,
        default_namespace: IdentifierLike | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        summary: Mapping[str, str] | None = None,
        expected_uuid: str | None = None,
    ) -> View:
        """A new current version of the view (rules as in the SQL catalog's ``replace_view``)."""
        ns, _ = self._split(identifier)
        representations = sql_representations(sql, dialect)
        firn_schema = to_firn_schema(schema)
        namespace = self._namespace(default_namespace) if default_namespace is not None else ns

        def change(base: ViewMetadata) -> ViewChange:
            return replace_view_version(
                base,
                firn_schema,
                representations,
                default_namespace=namespace,
                default_catalog=default_catalog,
                properties=properties,
                summary=summary,
            )

        return self._commit_view_change(identifier, change, expected_uuid)

    def rollback_view(
        self, identifier: IdentifierLike, version_id: int, *, expected_uuid: str | None = None
    ) -> View:
        """Make an earlier version (still kept in the metadata) current again."""
        return self._commit_view_change(
            identifier, lambda base: rollback_view_version(base, version_id), expected_uuid
        )

    def update_view_properties(
        self,
        identifier: IdentifierLike,
        updates: Mapping[str, str] | None = None,
        removals: set[str] | None = None,
    ) -> View:
        """Set and remove view properties (versions unchanged)."""
        return self._commit_view_change(
            identifier, lambda base: update_view_properties(base, updates, removals or ()), None
        )

    def _commit_view_change(
        self,
        identifier: IdentifierLike,
        change: Callable[[ViewMetadata], ViewChange],
        expected_uuid: str | None,
    ) -> View:
        ns, name = self._split(identifier)
        what = f"commit to view {self._fmt(ns, name)!r}"
        self._require("POST", p.VIEW, what)
        attempt = 0
        while True:
            current = self.load_view((*ns, name))
            base = current.metadata
            if expected_uuid is not None and base.view_uuid != expected_uuid:
                raise ValidationConflict(
                    f"view {self._fmt(ns, name)!r} is not the view this change was made for: UUID "
                    f"{base.view_uuid}, expected {expected_uuid} (it was dropped and re-created)"
                )
            _, updates = change(base)
            if not updates:
                return current
            body = {
                "identifier": p.identifier_json(ns, name),
                "requirements": [AssertViewUUID(base.view_uuid).to_json()],
                "updates": [u.to_json() for u in updates],
            }
            try:
                response = self._call(
                    "POST", self._path(p.VIEW, ns, view=name), what=what, route=_COMMIT_VIEW, body=body
                )
            except CommitConflict as e:
                props = base.view_properties
                if attempt >= props.commit_num_retries:
                    raise CommitConflict(
                        f"view {self._fmt(ns, name)!r} changed concurrently {attempt + 1} time(s); "
                        f"gave up after {props.commit_num_retries} retries: {e}"
                    ) from e
                attempt += 1
                wait_ms = min(
                    props.commit_max_retry_wait_ms, props.commit_min_retry_wait_ms * 2 ** (attempt - 1)
                )
                time.sleep(wait_ms * random.uniform(0.5, 1.0) / 1000)
                continue
            return self._view_from(ns, name, response_object(response, what), what)

    # -- drop and rename -----------------------------------------------------------------------
    def drop_view(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Remove the view from the catalog. The REST protocol has no purge for views (the
        server decides what happens to the metadata files), so ``purge=True`` is refused."""
        ns, name = self._split(identifier)
        what = f"drop view {self._fmt(ns, name)!r}"
        if purge:
            raise Unsupported(f"cannot {what} with purge: the REST protocol's dropView has no purge option")
        self._require("DELETE", p.VIEW, what)
        self._call("DELETE", self._path(p.VIEW, ns, view=name), what=what, route=_VIEW)

    def rename_view(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> View:
        src_ns, src = self._split(from_identifier)
        dst_ns, dst = self._split(to_identifier)
        what = f"rename view {self._fmt(src_ns, src)!r} to {self._fmt(dst_ns, dst)!r}"
        self._require("POST", p.RENAME_VIEW, what)
        body = {"source": p.identifier_json(src_ns, src), "destination": p.identifier_json(dst_ns, dst)}
        self._call("POST", self._path(p.RENAME_VIEW), what=what, route=_VIEW, body=body)
        return self.load_view((*dst_ns, dst))

    # -- helpers -------------------------------------------------------------------------------
    def _view_from(self, ns: Identifier, name: str, data: Mapping[str, Any], what: str) -> View:
        location = data.get("metadata-location")
        raw = data.get("metadata")
        if not isinstance(location, str) or not location or not isinstance(raw, Mapping):
            raise FirnError(f"{what}: the answer lacks metadata-location or metadata")
        try:
            metadata = view_metadata_from_dict(raw)
        except InvalidMetadata as e:
            raise InvalidMetadata(f"{what}: the server sent invalid view metadata: {e}") from e
        io = self._table_io(string_map(data.get("config"), f"{what}: config"), None, None)
        return View((*ns, name), metadata, location, io, self)


__all__ = ["RestViewOperations"]
