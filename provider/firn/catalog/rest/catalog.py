"""The REST catalog client: namespaces and tables over Iceberg's REST protocol.

``firn.load_catalog("rest+http://host:port")`` (or ``https``, or ``type="rest"``) returns a
:class:`RestCatalog`. Tables it loads are ordinary :class:`~firn.table.Table` objects: every
write goes through the commit loop (``firn.core.commit``), which lands each attempt with
:meth:`RestCatalog.commit_table`. Instead of writing a metadata file and swapping a pointer,
that sends the attempt's updates and requirements (spec ``updateTable``) and adopts the
metadata and location the server answers with. A 409 is a ``CommitConflict``: the loop
refreshes, re-applies its actions and retries. A 5xx or a lost answer is
``CommitStateUnknown``: files written for the attempt are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from firn.catalog.base import Identifier, IdentifierLike, PropertiesUpdateSummary, to_identifier
from firn.catalog.base_catalog import CatalogEntryLocation, EntryKind
from firn.catalog.lease import LeaseInfo, MaintenanceLease
from firn.catalog.rest import protocol as p
from firn.catalog.rest.base import response_object, string_map
from firn.catalog.rest.http import Route
from firn.catalog.rest.views import RestViewOperations
from firn.catalog.sql import SqlCatalog
from firn.core.create import new_table_metadata
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.updates import AssertTableUUID
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotFound,
    Unsupported,
)
from firn.spec.locations import normalize_location
from firn.spec.metadata_json import metadata_from_dict
from firn.spec.properties import FORMAT_VERSION
from firn.spec.schema_json import partition_spec_to_json, schema_to_json, sort_order_to_json
from firn.table.table import Table

if TYPE_CHECKING:
    from firn.core.create import PartitionSpecLike, SchemaLike, SortOrderLike
    from firn.spec.table_metadata import TableMetadata

_log = logging.getLogger(__name__)

_NAMESPACE = Route(not_found=NoSuchNamespace, conflict=AlreadyExists)
_DROP_NAMESPACE = Route(not_found=NoSuchNamespace, conflict=NamespaceNotEmpty)
_TABLE = Route(not_found=NoSuchTable, conflict=AlreadyExists)
_CREATE_TABLE = Route(not_found=NoSuchNamespace, conflict=AlreadyExists)
_COMMIT = Route(not_found=NoSuchTable, conflict=CommitConflict, commit=True)
# Where the table-creation metadata built on the client (for validation only) says it lives;
# the server picks the real location.
_UNPLACED = "rest:unplaced"
# Catalog property: the SQL database that holds this catalog's maintenance leases.
LEASE_URI = "maintenance.lease.uri"


class RestCatalog(RestViewOperations):
    """A catalog behind an Iceberg REST server (Polaris, Nessie, Lakekeeper, ``firn serve``, ...).

    ``uri`` is the server's base URI (requests go to ``<uri>/v1/...``). Properties use the
    names of Iceberg Java and PyIceberg: ``warehouse``, ``credential`` (OAuth2
    ``client_id:client_secret``), ``token``, ``oauth2-server-uri``, ``scope``, ``header.<Name>``
    (``header.X-Iceberg-Access-Delegation`` defaults to ``vended-credentials``; empty sends
    none), ``rest-page-size``, ``rest.client.connection-timeout-ms`` /
    ``rest.client.socket-timeout-ms``; everything else configures the FileIO (``s3.*``, ...).

    The REST protocol has no maintenance lease: ``maintenance.lease.uri`` names a SQL database
    (SQLite or Postgres, e.g. the one Airflow uses) where Firn keeps the leases of this
    catalog's tables; without it, maintenance runs are refused rather than left unguarded.
    """

    # -- the maintenance lease (kept in a SQL database of the user's choice) --------------------
    def maintenance_lease(
        self,
        identifier: IdentifierLike,
        operation: str,
        *,
        owner: str | None = None,
        duration_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
    ) -> MaintenanceLease:
        """The table's maintenance lease, in the ``maintenance.lease.uri`` database."""
        return self._lease_store().maintenance_lease(
            identifier,
            operation,
            owner=owner,
            duration_ms=duration_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
        )

    def maintenance_lease_holder(self, identifier: IdentifierLike) -> LeaseInfo | None:
        """The unexpired lease on the table (who runs what until when), or None."""
        return self._lease_store().maintenance_lease_holder(identifier)

    def close(self) -> None:
        """Close the HTTP connections (and the lease database's, if one was opened)."""
        super().close()
        store: SqlCatalog | None = getattr(self, "_leases", None)
        if store is not None:
            store.close()

    def _lease_store(self) -> SqlCatalog:
        store: SqlCatalog | None = getattr(self, "_leases", None)
        if store is not None:
            return store
        uri = self._properties.get(LEASE_URI)
        if not uri:
            raise Unsupported(
                f"REST catalog {self._name!r}: the Iceberg REST protocol has no maintenance lease; "
                f"set the catalog property {LEASE_URI} to a SQL database (sqlite:///... or "
                "postgresql://...) where Firn keeps the leases, so two maintenance runs never overlap"
            )
        lease_props = {k: v for k, v in self._properties.items() if k.startswith("maintenance.lease.")}
        store = SqlCatalog(self._name, uri, properties=lease_props)
        self._leases = store
        return store

    # -- namespaces ----------------------------------------------------------------------------
    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        ns = self._namespace(namespace)
        self._call(
            "POST",
            self._path(p.NAMESPACES),
            what=f"create namespace {self._fmt(ns)!r}",
            route=_NAMESPACE,
            body={
                "namespace": list(ns),
                "properties": {str(k): str(v) for k, v in (properties or {}).items()},
            },
        )

    def list_namespaces(self, parent: IdentifierLike = ()) -> list[Identifier]:
        """The namespaces one level below ``parent`` (top-level namespaces by default)."""
        parent_ns = to_parent(parent)
        params = {"parent": self._separator.join(parent_ns)} if parent_ns else {}
        what = f"list namespaces under {self._fmt(parent_ns)!r}" if parent_ns else "list namespaces"
        out = []
        for ns in self._pages(self._path(p.NAMESPACES), "namespaces", what, _NAMESPACE, params):
            if not isinstance(ns, list) or not all(isinstance(level, str) for level in ns):
                raise FirnError(f"{what}: a namespace must be a list of strings, got {ns!r}")
            out.append(tuple(ns))
        return out

    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = self._namespace(namespace)
        method = "HEAD" if self._supports("HEAD", p.NAMESPACE) else "GET"
        try:
            self._call(
                method,
                self._path(p.NAMESPACE, ns),
                what=f"check namespace {self._fmt(ns)!r}",
                route=_NAMESPACE,
            )
        except NoSuchNamespace:
            return False
        return True

    def drop_namespace(self, namespace: IdentifierLike) -> None:
        """Drop an empty namespace (``NamespaceNotEmpty`` otherwise)."""
        ns = self._namespace(namespace)
        self._call(
            "DELETE",
            self._path(p.NAMESPACE, ns),
            what=f"drop namespace {self._fmt(ns)!r}",
            route=_DROP_NAMESPACE,
        )

    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        ns = self._namespace(namespace)
        what = f"load namespace {self._fmt(ns)!r}"
        data = response_object(
            self._call("GET", self._path(p.NAMESPACE, ns), what=what, route=_NAMESPACE), what
        )
        return string_map(data.get("properties"), f"{what}: properties")

    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: set[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set properties in one request; the server reports what it changed."""
        ns = self._namespace(namespace)
        what = f"update properties of namespace {self._fmt(ns)!r}"
        body = {
            "removals": sorted(removals or ()),
            "updates": {str(k): str(v) for k, v in (updates or {}).items()},
        }
        data = response_object(
            self._call(
                "POST", self._path(p.NAMESPACE_PROPERTIES, ns), what=what, route=_NAMESPACE, body=body
            ),
            what,
        )

        def keys(field: str) -> tuple[str, ...]:
            value = data.get(field) or []
            if not isinstance(value, list):
                raise FirnError(f"{what}: {field!r} must be a list, got {value!r}")
            return tuple(sorted(str(v) for v in value))

        return PropertiesUpdateSummary(
            removed=keys("removed"), updated=keys("updated"), missing=keys("missing")
        )

    # -- tables --------------------------------------------------------------------------------
    def create_table(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        *,
        location: str | None = None,
        partition_spec: PartitionSpecLike = None,
        sort_order: SortOrderLike = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create a table (spec ``createTable``); the server assigns its location unless given.

        The schema, spec and sort order are validated and given fresh ids here first, so a
        mistake is reported before anything is sent. ``format-version`` is sent only when
        asked for: otherwise the server's default applies (Firn's server: V2).
        """
        ns, name = self._split(identifier)
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        requested = format_version is not None or FORMAT_VERSION in props
        draft = new_table_metadata(
            schema,
            location=_UNPLACED,
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=props,
            format_version=format_version,
        )
        sent = dict(draft.properties)
        if requested:
            sent[FORMAT_VERSION] = str(draft.format_version)
        body: dict[str, Any] = {
            "name": name,
            "schema": schema_to_json(draft.schema()),
            "partition-spec": partition_spec_to_json(draft.spec()),
            "write-order": sort_order_to_json(draft.sort_order()),
            "stage-create": False,
            "properties": sent,
        }
        if location:
            # Refused here as the server would (relative, '..'); where it may lie is the server's call.
            body["location"] = normalize_location(location, what=f"location of table {self._fmt(ns, name)!r}")
        what = f"create table {self._fmt(ns, name)!r}"
        response = self._call("POST", self._path(p.TABLES, ns), what=what, route=_CREATE_TABLE, body=body)
        return self._table_from(ns, name, response_object(response, what), what)

    def load_table(self, identifier: IdentifierLike) -> Table:
        ns, name = self._split(identifier)
        what = f"load table {self._fmt(ns, name)!r}"
        response = self._call("GET", self._path(p.TABLE, ns, table=name), what=what, route=_TABLE)
        return self._table_from(ns, name, response_object(response, what), what)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        ns, name = self._split(identifier)
        method = "HEAD" if self._supports("HEAD", p.TABLE) else "GET"
        try:
            self._call(
                method,
                self._path(p.TABLE, ns, table=name),
                what=f"check table {self._fmt(ns, name)!r}",
                route=_TABLE,
            )
        except NoSuchTable:
            return False
        return True

    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = self._namespace(namespace)
        what = f"list tables of namespace {self._fmt(ns)!r}"
        return self._identifiers(self._path(p.TABLES, ns), what, _NAMESPACE)

    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Drop the table; ``purge=True`` asks the server to delete its files too
        (``purgeRequested``)."""
        ns, name = self._split(identifier)
        self._call(
            "DELETE",
            self._path(p.TABLE, ns, table=name),
            what=f"drop table {self._fmt(ns, name)!r}",
            route=_TABLE,
            params={"purgeRequested": "true" if purge else "false"},
        )

    def entry_locations(self) -> list[CatalogEntryLocation]:
        """Where every table and view the server lists lives, by walking its namespaces and
        loading each entry (the REST protocol has no bulk listing of locations). An entry
        that vanishes meanwhile is left out; one that cannot be loaded (not authorized,
        unreadable) is reported with an unknown location, so destructive steps delete
        nothing rather than guess."""
        out: list[CatalogEntryLocation] = []
        pending: list[Identifier] = [()]
        seen: set[Identifier] = {()}
        while pending:
            ns = pending.pop()
            if ns:
                for name in self.list_tables(ns):
                    out += self._entry(name, "table")
                if self._supports("GET", p.VIEWS):
                    for name in self.list_views(ns):
                        out += self._entry(name, "view")
            # A server that ignores ``parent`` answers the same namespaces again: visit each once.
            children = [c for c in self.list_namespaces(ns) if c not in seen]
            seen.update(children)
            pending += children
        return out

    def _entry(self, ident: Identifier, kind: EntryKind) -> list[CatalogEntryLocation]:
        try:
            if kind == "table":
                t = self.load_table(ident)
                return [CatalogEntryLocation(ident, kind, t.location, t.metadata_location)]
            v = self.load_view(ident)
            return [CatalogEntryLocation(ident, kind, v.metadata.location, v.metadata_location)]
        except NotFound:
            return []
        except FirnError as e:
            _log.warning("cannot tell where %s %s lives: %s", kind, ".".join(ident), e)
            return [CatalogEntryLocation(ident, kind, None, "")]

    def rename_table(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> Table:
        src_ns, src = self._split(from_identifier)
        dst_ns, dst = self._split(to_identifier)
        self._call(
            "POST",
            self._path(p.RENAME_TABLE),
            what=f"rename table {self._fmt(src_ns, src)!r} to {self._fmt(dst_ns, dst)!r}",
            route=_TABLE,
            body={"source": p.identifier_json(src_ns, src), "destination": p.identifier_json(dst_ns, dst)},
        )
        return self.load_table((*dst_ns, dst))

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        """Add an existing table by its metadata file (spec ``registerTable``)."""
        ns, name = self._split(identifier)
        what = f"register table {self._fmt(ns, name)!r}"
        body = {"name": name, "metadata-location": metadata_location}
        response = self._call(
            "POST", self._path(p.REGISTER_TABLE, ns), what=what, route=_CREATE_TABLE, body=body
        )
        return self._table_from(ns, name, response_object(response, what), what)

    # -- commits -------------------------------------------------------------------------------
    def load_metadata_location(self, identifier: IdentifierLike) -> str:
        """The table's current metadata location, as ``loadTable`` reports it."""
        ns, name = self._split(identifier)
        what = f"load table {self._fmt(ns, name)!r}"
        data = response_object(
            self._call("GET", self._path(p.TABLE, ns, table=name), what=what, route=_TABLE), what
        )
        location = data.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise FirnError(f"{what}: the server reported no metadata-location")
        return location

    def commit_table(self, identifier: IdentifierLike, commit: TableCommit) -> CommittedMetadata:
        """Send one commit attempt (spec ``updateTable``) and adopt the server's result.

        Requirements go as the spec defines them, plus ``assert-table-uuid`` (as Iceberg Java
        sends on every table update), so a table dropped and re-created under the name is
        never changed by a commit planned for the old one. Firn-only requirements without a
        REST form (the format-version guard of an upgrade) are left to the server, which
        refuses a downgrading ``upgrade-format-version`` itself.
        """
        ns, name = self._split(identifier)
        requirements = [r for r in commit.requirements if r.TYPE is not None]
        if not any(isinstance(r, AssertTableUUID) for r in requirements):
            requirements.insert(0, AssertTableUUID(commit.base.table_uuid))
        body = {
            "identifier": p.identifier_json(ns, name),
            "requirements": [r.to_json() for r in requirements],
            "updates": [u.to_json() for u in commit.updates],
        }
        what = f"commit to table {self._fmt(ns, name)!r}"
        response = self._call(
            "POST", self._path(p.TABLE, ns, table=name), what=what, route=_COMMIT, body=body
        )
        try:
            data = response_object(response, what)
            location = data.get("metadata-location")
            if not isinstance(location, str) or not location:
                raise FirnError("the answer has no metadata-location")
            metadata = _metadata(data, what)
        except FirnError as e:
            # The server said the commit succeeded but what it sent back is unusable.
            raise CommitStateUnknown(
                f"{what}: the commit was accepted but its result is unreadable: {e}"
            ) from e
        return CommittedMetadata(metadata, location)

    # -- helpers -------------------------------------------------------------------------------
    def _identifiers(self, path: str, what: str, route: Route) -> list[Identifier]:
        out: list[Identifier] = []
        for item in self._pages(path, "identifiers", what, route, {}):
            ns, name = (
                (item.get("namespace"), item.get("name")) if isinstance(item, Mapping) else (None, None)
            )
            if (
                not isinstance(ns, list)
                or not all(isinstance(x, str) for x in ns)
                or not isinstance(name, str)
            ):
                raise FirnError(f"{what}: invalid identifier {item!r}")
            out.append((*ns, name))
        return out

    def _table_from(self, ns: Identifier, name: str, data: Mapping[str, Any], what: str) -> Table:
        """A :class:`Table` from a ``LoadTableResult``, with the FileIO its config calls for."""
        location = data.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise FirnError(f"{what}: the server reported no metadata-location (a staged table?)")
        metadata = _metadata(data, what)
        config = string_map(data.get("config"), f"{what}: config")
        io = self._table_io(config, data.get("storage-credentials"), metadata.location)
        return Table((*ns, name), metadata, location, io, self)


def _metadata(data: Mapping[str, Any], what: str) -> TableMetadata:
    raw = data.get("metadata")
    if not isinstance(raw, Mapping):
        raise FirnError(f"{what}: the answer has no table metadata object")
    try:
        return metadata_from_dict(raw, location=str(data.get("metadata-location") or "") or None)
    except InvalidMetadata as e:
        raise InvalidMetadata(f"{what}: the server sent invalid table metadata: {e}") from e


def to_parent(value: IdentifierLike) -> Identifier:
    """A parent namespace for listing: empty means the top level."""
    return to_identifier(value) if value else ()


__all__ = ["RestCatalog"]
