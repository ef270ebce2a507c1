"""What the routes share: the wrapped catalog, its settings, and the helpers that read path
parameters and write the spec's result objects."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import Response

from firn.catalog.base import Catalog, Identifier, to_identifier
from firn.catalog.rest import protocol as p
from firn.errors import FirnError, ValidationError
from firn.rest.auth import TokenAuthority
from firn.rest.errors import RestError
from firn.spec.metadata_json import metadata_to_json
from firn.spec.properties import FORMAT_VERSION
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import check_format_version

T = TypeVar("T")

# Iceberg's catalog property prefix for the defaults of new tables (CatalogProperties
# TABLE_DEFAULT_PREFIX): ``table-default.format-version=3`` on the catalog.
TABLE_DEFAULT_PREFIX = "table-default."
# The format of a table created over REST without one: REST clients are other engines, and
# PyIceberg, Spark and Trino read V2 but not V4 (Firn's library default). V4 only when asked.
REST_DEFAULT_FORMAT_VERSION = 2

# (table identifier, its metadata, the access mechanisms the client asked for) -> table config.
TableConfigHook = Callable[[Identifier, TableMetadata, tuple[str, ...]], Mapping[str, str]]

# The methods a catalog needs for the server to offer views.
VIEW_METHODS = (
    "create_view",
    "load_view",
    "view_exists",
    "list_views",
    "drop_view",
    "rename_view",
    "register_view",
    "commit_view",
    "check_view_change",
)


@dataclass
class ServerState:
    """One served catalog and how it is served."""

    catalog: Catalog
    auth: TokenAuthority
    prefix: str = ""
    defaults: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, str] = field(default_factory=dict)
    table_defaults: Mapping[str, str] = field(default_factory=dict)
    table_config: TableConfigHook | None = None

    @property
    def serves_views(self) -> bool:
        return all(callable(getattr(self.catalog, m, None)) for m in VIEW_METHODS)

    def authenticate(self, request: Request) -> None:
        """FastAPI dependency: a 401 unless the request is authenticated (when auth is on)."""
        self.auth.authenticate(request)

    def config_for(self, ident: Identifier, metadata: TableMetadata, request: Request) -> dict[str, str]:
        """The ``config`` of a ``LoadTableResult``: what the hook vends for the mechanisms the
        client listed in ``X-Iceberg-Access-Delegation`` (nothing without a hook)."""
        if self.table_config is None:
            return {}
        header = request.headers.get(p.ACCESS_DELEGATION_HEADER, "")
        mechanisms = tuple(m.strip() for m in header.split(",") if m.strip())
        return {str(k): str(v) for k, v in self.table_config(ident, metadata, mechanisms).items()}


def served_table_defaults(catalog: Catalog, explicit: Mapping[str, str] | None) -> dict[str, str]:
    """The properties a table created over REST gets unless its request sets them: format
    :data:`REST_DEFAULT_FORMAT_VERSION`, under the catalog's ``table-default.*`` properties,
    under the server's ``explicit`` defaults (``--table-default``)."""
    # Firn's catalogs have properties; the Catalog protocol does not ask for them.
    properties: Mapping[str, str] = getattr(catalog, "properties", None) or {}
    from_catalog = {
        key[len(TABLE_DEFAULT_PREFIX) :]: str(value)
        for key, value in properties.items()
        if key.startswith(TABLE_DEFAULT_PREFIX) and len(key) > len(TABLE_DEFAULT_PREFIX)
    }
    served = {FORMAT_VERSION: str(REST_DEFAULT_FORMAT_VERSION), **from_catalog, **dict(explicit or {})}
    # A bad default fails when the server starts, not in every create.
    check_format_version(served[FORMAT_VERSION], location="the served table defaults")
    return served


def default_format_version(table_defaults: Mapping[str, str]) -> int:
    """The format version a table created over REST gets when its request names none."""
    return check_format_version(table_defaults.get(FORMAT_VERSION, str(REST_DEFAULT_FORMAT_VERSION)))


def parse(what: str, fn: Callable[..., T], *args: Any) -> T:
    """Run one of Firn's readers on request data; any failure is a 400 naming ``what``."""
    try:
        return fn(*args)
    except ValidationError:
        raise
    except (FirnError, LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        # ArithmeticError: e.g. a huge number where an int is read; LookupError: an index or
        # key the object lacks. Whatever Firn's readers trip over in request data is a 400.
        raise ValidationError(f"invalid {what}: {e}") from e
    except RecursionError:
        raise ValidationError(f"invalid {what}: it is nested too deeply") from None


def namespace_param(value: str) -> Identifier:
    """The namespace of a path parameter (levels separated by 0x1F), each level held to the
    identifier rule (:mod:`firn.catalog.identifiers`) whatever catalog is served."""
    try:
        ns = p.decode_namespace(value)
    except ValidationError as e:
        raise RestError(400, p.BAD_REQUEST, str(e)) from e
    if not ns:
        raise RestError(400, p.BAD_REQUEST, "the namespace must not be empty")
    return to_identifier(ns)


def check_identifier(body_ident: Any, ns: Identifier, name: str) -> None:
    """A commit body's optional ``identifier`` must name the table of the path."""
    if body_ident is not None and (tuple(body_ident.namespace), body_ident.name) != (ns, name):
        raise RestError(
            400,
            p.BAD_REQUEST,
            f"the body names {'.'.join((*body_ident.namespace, body_ident.name))!r} "
            f"but the path names {'.'.join((*ns, name))!r}",
        )


def paginate(
    items: Sequence[T], page_token: str | None, page_size: int | None
) -> tuple[Sequence[T], str | None]:
    """One page (spec ``PageToken``): all items unless the client sent ``pageToken`` (possibly
    empty) and ``pageSize``; the token is the offset of the next page."""
    if page_token is None or page_size is None:
        return items, None
    try:
        start = int(page_token) if page_token else 0
    except ValueError:
        raise RestError(400, p.BAD_REQUEST, f"invalid pageToken {page_token!r}") from None
    if start < 0:
        raise RestError(400, p.BAD_REQUEST, f"invalid pageToken {page_token!r}")
    end = start + page_size
    return items[start:end], (str(end) if end < len(items) else None)


def identifiers_body(idents: Iterable[Identifier], next_token: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"identifiers": [p.identifier_json(i[:-1], i[-1]) for i in idents]}
    if next_token is not None:
        body["next-page-token"] = next_token
    return body


def table_result(
    metadata: TableMetadata, location: str | None, config: Mapping[str, str] | None = None
) -> Response:
    """A ``LoadTableResult`` (or ``CommitTableResponse`` without ``config``). The metadata is
    written with Firn's own serializer, which reuses each snapshot's cached JSON text."""
    text = f'{{"metadata-location":{json.dumps(location)},"metadata":{metadata_to_json(metadata)}'
    if config is not None:
        text += f',"config":{json.dumps(dict(config))}'
    return Response(text + "}", media_type="application/json")


__all__ = [
    "REST_DEFAULT_FORMAT_VERSION",
    "TABLE_DEFAULT_PREFIX",
    "VIEW_METHODS",
    "ServerState",
    "TableConfigHook",
    "check_identifier",
    "default_format_version",
    "identifiers_body",
    "namespace_param",
    "paginate",
    "parse",
    "served_table_defaults",
    "table_result",
]
