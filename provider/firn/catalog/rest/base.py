"""What every REST catalog operation stands on: configuration, routes, identifiers, FileIO.

Configuration follows the spec's ``getConfig``: the client asks ``/v1/config`` (with its
``warehouse``), then uses the server's ``defaults``, overridden by its own properties,
overridden by the server's ``overrides`` (``prefix``, ``uri``, FileIO settings, ...).
Tables get a FileIO built from those properties merged with what ``loadTable`` returns for
the table: its ``config``, then the ``storage-credentials`` entry with the longest prefix of
the table's location (spec ``LoadTableResult``: vended credentials take precedence).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from firn.catalog.base import Identifier, IdentifierLike, table_identifier, to_identifier
from firn.catalog.rest import protocol as p
from firn.catalog.rest.http import RestSession, Route, session_settings
from firn.errors import FirnError, Unsupported, ValidationError
from firn.io.base import FileIO
from firn.io.pyarrow_io import load_file_io
from firn.util.lru import LRUCache
from firn.util.secrets import mask_secrets

# How many distinct table FileIO configurations to keep (vended credentials differ per table).
_IO_CACHE_SIZE = 64


def string_map(value: Any, what: str) -> dict[str, str]:
    """A JSON object of strings from a response (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise FirnError(f"{what} must be a JSON object of strings, got {value!r}")
    return {k: str(v) for k, v in value.items()}


def response_object(response: Any, what: str) -> Mapping[str, Any]:
    """The JSON object of a 2xx response (``FirnError`` if the body is not one)."""
    try:
        data = response.json()
    except ValueError as e:
        raise FirnError(f"{what}: the server's answer is not JSON ({e}): {response.text[:200]!r}") from e
    if not isinstance(data, Mapping):
        raise FirnError(f"{what}: the server's answer is not a JSON object: {response.text[:200]!r}")
    return data


class RestCatalogBase:
    """Configuration, session and helpers shared by the table and view operations."""

    def __init__(
        self,
        name: str,
        uri: str,
        *,
        warehouse: str | None = None,
        properties: Mapping[str, str] | None = None,
        io: FileIO | None = None,
    ) -> None:
        if not name:
            raise ValidationError("a catalog needs a non-empty name")
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        if warehouse:
            props[p.WAREHOUSE] = warehouse
        self._name = name
        session = RestSession(uri, props)
        try:
            defaults, overrides, endpoints = self._fetch_config(session, props.get(p.WAREHOUSE))
        except BaseException:
            session.close()
            raise
        merged = {**defaults, **props, **overrides}
        if session_settings(merged) != session_settings(props):
            # The server's settings change the URI, headers, credentials or timeouts: reconnect.
            session.close()
            session = RestSession(merged.get(p.URI) or uri, merged)
        self._session = session
        try:
            self._configure(merged, endpoints, io)
        except BaseException:
            session.close()
            raise

    def _configure(self, merged: dict[str, str], endpoints: list[str], io: FileIO | None) -> None:
        self._properties = merged
        self._prefix = merged.get(p.PREFIX, "").strip("/")
        if endpoints:
            self._endpoints = frozenset(endpoints)
        elif merged.get(p.VIEW_ENDPOINTS_SUPPORTED, "").lower() == "true":
            # Older servers list nothing; this property says they serve views (HEAD aside).
            self._endpoints = p.DEFAULT_ENDPOINTS | {e for e in p.VIEW_ENDPOINTS if not e.startswith("HEAD ")}
        else:
            self._endpoints = p.DEFAULT_ENDPOINTS
        self._separator = unquote(merged.get(p.NAMESPACE_SEPARATOR) or p.DEFAULT_SEPARATOR)
        self._io = io if io is not None else load_file_io(merged)
        # FileIOs by their merged properties (vended credentials differ per table).
        self._io_cache: LRUCache[FileIO] = LRUCache(_IO_CACHE_SIZE)
        self._io_lock = threading.Lock()

    @staticmethod
    def _fetch_config(
        session: RestSession, warehouse: str | None
    ) -> tuple[dict[str, str], dict[str, str], list[str]]:
        params = {p.WAREHOUSE: warehouse} if warehouse else None
        response = session.call(
            "GET", f"/v1/{p.CONFIG}", what="load the catalog configuration", params=params
        )
        data = response_object(response, "GET /v1/config")
        endpoints = data.get("endpoints") or []
        if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
            raise FirnError(f"GET /v1/config: 'endpoints' must be a list of strings, got {endpoints!r}")
        return (
            string_map(data.get("defaults"), "config defaults"),
            string_map(data.get("overrides"), "config overrides"),
            [" ".join(e.split()) for e in endpoints],
        )

    # -- the Catalog protocol's plain properties ----------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def io(self) -> FileIO:
        """The FileIO of the catalog's merged properties (tables get their own, see above)."""
        return self._io

    @property
    def uri(self) -> str:
        return self._session.uri

    @property
    def properties(self) -> Mapping[str, str]:
        """The client properties after merging the server's defaults and overrides."""
        return dict(self._properties)

    @property
    def warehouse(self) -> str | None:
        return self._properties.get(p.WAREHOUSE)

    @property
    def endpoints(self) -> frozenset[str]:
        """What the server said it supports (the spec's defaults when it said nothing)."""
        return self._endpoints

    def close(self) -> None:
        """Close the HTTP connections."""
        self._session.close()

    def __enter__(self) -> RestCatalogBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return mask_secrets(f"{type(self).__name__}({self._name!r}, uri={self.uri!r})")

    # -- routes and identifiers ----------------------------------------------------------------
    def _supports(self, method: str, route: str) -> bool:
        return p.endpoint(method, route) in self._endpoints

    def _require(self, method: str, route: str, what: str) -> None:
        if not self._supports(method, route):
            raise Unsupported(
                f"cannot {what}: the REST catalog at {mask_secrets(self.uri)} does not offer "
                f"{p.endpoint(method, route)}"
            )

    def _path(self, route: str, namespace: Sequence[str] = (), **names: str) -> str:
        parts = {"namespace": p.encode_namespace(namespace, self._separator)}
        parts.update({k: quote(v, safe="") for k, v in names.items()})
        prefix = f"{quote(self._prefix, safe='/')}/" if self._prefix else ""
        return f"/v1/{prefix}{route.format(**parts)}"

    def _call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        route: Route = Route(),  # noqa: B008 - frozen, shared default
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        return self._session.call(method, path, what=what, route=route, body=body, params=params)

    @staticmethod
    def _namespace(value: IdentifierLike) -> Identifier:
        ns = to_identifier(value) if value else ()
        if not ns:
            raise ValidationError("a namespace needs at least one level")
        return ns

    @staticmethod
    def _split(identifier: IdentifierLike) -> tuple[Identifier, str]:
        return table_identifier(identifier)

    @staticmethod
    def _fmt(ns: Sequence[str], name: str | None = None) -> str:
        return ".".join((*ns, name)) if name is not None else ".".join(ns)

    def _pages(
        self, path: str, key: str, what: str, route: Route, params: Mapping[str, str]
    ) -> Iterator[Any]:
        """The items under ``key`` of every page of a list route (spec ``PageToken``)."""
        query = dict(params)
        size = self._properties.get(p.PAGE_SIZE)
        if size:
            query["pageSize"] = size
        while True:
            data = response_object(self._call("GET", path, what=what, route=route, params=query), what)
            items = data.get(key) or []
            if not isinstance(items, list):
                raise FirnError(f"{what}: {key!r} must be a list, got {items!r}")
            yield from items
            token = data.get("next-page-token")
            if not token:
                return
            query["pageToken"] = str(token)

    # -- FileIO ------------------------------------------------------------------------------
    def _table_io(self, config: Mapping[str, str], credentials: Any, location: str | None) -> FileIO:
        """A FileIO for a loaded table: catalog properties, the table's config, then the
        best-matching vended storage credential (spec ``LoadTableResult``)."""
        merged = {**self._properties, **config, **best_storage_credential(credentials, location)}
        if merged == self._properties:
            return self._io
        key = tuple(sorted(merged.items()))
        with self._io_lock:  # one FileIO per key, even when tables load in threads
            io = self._io_cache.get(key)
            if io is None:
                io = load_file_io(merged)
                self._io_cache.put(key, io)
            return io


def best_storage_credential(credentials: Any, location: str | None) -> dict[str, str]:
    """The ``config`` of the ``storage-credentials`` entry whose ``prefix`` is the longest prefix
    of ``location`` (Iceberg Java and PyIceberg pick the same way)."""
    if not credentials or not location:
        return {}
    if not isinstance(credentials, list):
        raise FirnError(f"'storage-credentials' must be a list, got {credentials!r}")
    best: Mapping[str, Any] | None = None
    for entry in credentials:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("prefix"), str):
            raise FirnError(f"invalid storage credential {entry!r}: it needs a 'prefix' and a 'config'")
        if location.startswith(entry["prefix"]) and (
            best is None or len(entry["prefix"]) > len(best["prefix"])
        ):
            best = entry
    return string_map(best.get("config"), "storage credential config") if best is not None else {}


__all__ = ["RestCatalogBase", "best_storage_credential", "response_object", "string_map"]
