"""A ``firn`` Airflow connection read and checked: :class:`FirnConnectionConfig`.

Connection fields (the form is declared in :mod:`firn_airflow.get_provider_info`):

* ``host`` — the catalog URI given to :func:`firn.load_catalog` (``sqlite:///…``,
  ``postgresql+psycopg://…``, ``memory://``);
* ``login`` / ``password`` — the catalog database's credentials, merged into a SQL URI that
  names no user / carries no password (so the password lives in the masked password field,
  not in the URI);
* ``extra``: ``warehouse``, ``catalog_name`` (default ``default``), ``properties`` (a JSON
  object of catalog and FileIO properties) and the storage credentials ``s3_access_key_id``,
  ``s3_secret_access_key``, ``s3_session_token``, which become the ``s3.*`` properties.

Every secret (password, storage keys, sensitive properties, a password in the URI's user-info
or in a ``?password=`` query parameter) is registered with Airflow's secrets masker as soon as
the connection is read, as written and in every percent-encoded form a URI may give it
(:func:`firn.util.secrets.encoded_forms`: the masker matches literal strings only), so task
logs show ``***`` instead. Messages built here go through Firn's one masking function,
:func:`firn.util.secrets.mask_secrets`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from airflow.sdk.log import mask_secret

import firn
from firn.errors import FirnError
from firn.io.pyarrow_io import S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN
from firn.util.secrets import encoded_forms, is_secret_key, mask_secrets
from firn_airflow.constants import (
    CONN_TYPE,
    DEFAULT_CATALOG_NAME,
    EXTRA_CATALOG_NAME,
    EXTRA_PROPERTIES,
    EXTRA_S3_ACCESS_KEY_ID,
    EXTRA_S3_SECRET_ACCESS_KEY,
    EXTRA_S3_SESSION_TOKEN,
    EXTRA_WAREHOUSE,
)
from firn_airflow.errors import FirnConnectionError

if TYPE_CHECKING:
    from firn.catalog.base import Catalog

# Catalog URI schemes of database servers: login/password can be merged into them.
_SQL_SCHEMES = ("postgresql", "postgres")

_STORAGE_EXTRAS = (
    (EXTRA_S3_ACCESS_KEY_ID, S3_ACCESS_KEY_ID),
    (EXTRA_S3_SECRET_ACCESS_KEY, S3_SECRET_ACCESS_KEY),
    (EXTRA_S3_SESSION_TOKEN, S3_SESSION_TOKEN),
)


class ConnectionLike(Protocol):
    """The parts of an Airflow connection the hook reads (Task SDK and core models alike)."""

    conn_id: str
    conn_type: str | None
    host: str | None
    login: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class FirnConnectionConfig:
    """Everything :func:`firn.load_catalog` needs, read from one connection.

    ``uri`` and ``properties`` may hold secrets: log :attr:`display_uri` and never the rest.
    """

    conn_id: str
    uri: str
    name: str
    warehouse: str | None
    properties: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()

    @property
    def display_uri(self) -> str:
        """The catalog URI with its secrets (a password, a ``password=`` parameter) as ``***``."""
        return self.redact(self.uri)

    def redact(self, text: str) -> str:
        """``text`` with every secret of this connection, in any encoded form, and any other
        secret :func:`~firn.util.secrets.mask_secrets` recognises replaced by ``***``."""
        return mask_secrets(text, self.secrets)

    def load(self) -> Catalog:
        """Open the catalog (``firn.load_catalog``); errors name the connection, not its secrets."""
        try:
            return firn.load_catalog(
                self.uri, warehouse=self.warehouse, name=self.name, **dict(self.properties)
            )
        except FirnError as e:
            raise with_context(e, f"connection {self.conn_id!r}", self) from e


def _extra(extra: Mapping[str, Any], key: str) -> Any:
    """An extra field, stored plainly (Airflow 3 forms) or as ``extra__firn__<key>`` (older forms)."""
    value = extra.get(key)
    if value is None or value == "":
        value = extra.get(f"extra__{CONN_TYPE}__{key}")
    return None if value == "" else value


def _property_value(conn_id: str, key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise FirnConnectionError(
        f"connection {conn_id!r}: catalog property {key!r} must be a string, number or boolean, "
        f"got {type(value).__name__}"
    )


def _properties(conn_id: str, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise FirnConnectionError(
                f"connection {conn_id!r}: extra {EXTRA_PROPERTIES!r} is not valid JSON ({e.msg} "
                f"at position {e.pos})"
            ) from None
    if not isinstance(raw, dict):
        raise FirnConnectionError(
            f"connection {conn_id!r}: extra {EXTRA_PROPERTIES!r} must be a JSON object of catalog "
            f"properties, got {type(raw).__name__}"
        )
    return {str(k): _property_value(conn_id, str(k), v) for k, v in raw.items()}


def _merge_credentials(conn_id: str, uri: str, login: str | None, password: str | None) -> str:
    """Put the connection's login/password into a SQL catalog URI that has none of its own."""
    if not (login or password):
        return uri
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in _SQL_SCHEMES:
        raise FirnConnectionError(
            f"connection {conn_id!r}: login/password are the catalog database's credentials, "
            f"but a {scheme!r} catalog takes none (only postgresql:// catalogs do)"
        )
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(uri)
    except (ArgumentError, ValueError):
        raise FirnConnectionError(f"connection {conn_id!r}: the catalog URI is not a valid URL") from None
    if login and not url.username:
        url = url.set(username=login)
    if password and url.password is None:
        url = url.set(password=password)
    return url.render_as_string(hide_password=False)


def catalog_config(conn: ConnectionLike) -> FirnConnectionConfig:
    """Read and check a ``firn`` connection; registers its secrets with the secrets masker."""
    conn_id = conn.conn_id
    if conn.conn_type != CONN_TYPE:
        raise FirnConnectionError(
            f"connection {conn_id!r} has type {conn.conn_type!r}; a Firn connection has type {CONN_TYPE!r}"
        )
    extra = conn.extra_dejson or {}
    secrets: list[str] = []
    if conn.password:
        secrets.append(conn.password)
    properties = _properties(conn_id, _extra(extra, EXTRA_PROPERTIES))
    for extra_key, prop in _STORAGE_EXTRAS:
        value = _extra(extra, extra_key)
        if value is not None:
            properties[prop] = _property_value(conn_id, extra_key, value)
    secrets.extend(v for k, v in properties.items() if v and is_secret_key(k))
    # Airflow also masks any other property whose name it deems sensitive.
    mask_secret(dict(properties))
    host = (conn.host or "").strip()
    if not host:
        _register(secrets)
        raise FirnConnectionError(
            f"connection {conn_id!r} has no catalog URI: set its host, e.g. sqlite:///warehouse/catalog.db"
        )
    secrets.extend(_uri_secrets(host))
    _register(secrets)
    uri = _merge_credentials(conn_id, host, conn.login, conn.password)
    warehouse = _extra(extra, EXTRA_WAREHOUSE)
    name = _extra(extra, EXTRA_CATALOG_NAME) or DEFAULT_CATALOG_NAME
    return FirnConnectionConfig(
        conn_id=conn_id,
        uri=uri,
        name=str(name),
        warehouse=str(warehouse) if warehouse is not None else None,
        properties=properties,
        secrets=tuple(dict.fromkeys(secrets)),
    )


def _register(secrets: list[str]) -> None:
    """Feed Airflow's secrets masker every form of every secret: it replaces literal strings
    only, and a password reaches logs percent-encoded inside a URI (``p%40ss`` for ``p@ss``,
    which is how SQLAlchemy renders the merged connection URI) as often as plainly."""
    for secret in dict.fromkeys(secrets):
        for form in encoded_forms(secret):
            mask_secret(form)


def _uri_secrets(uri: str) -> list[str]:
    """The secrets written into a catalog URI: the user-info password and the value of every
    query parameter whose name is a secret (``?password=...``), as written and decoded."""
    parts = urlsplit(uri)
    found: list[str] = []
    try:
        raw = parts.password
    except ValueError:
        raw = None
    if raw is None and "@" in parts.netloc:  # urlsplit gives up on some malformed netlocs
        userinfo = parts.netloc.rpartition("@")[0]
        raw = userinfo.partition(":")[2] or None
    if raw:
        found += [raw, unquote(raw)]
    for query in (parts.query, parts.fragment):
        for key, value in parse_qsl(query, keep_blank_values=False):
            if value and is_secret_key(key):
                found.append(value)  # parse_qsl decodes; encoded_forms adds the encoded ones
    return [s for s in dict.fromkeys(found) if s]


def with_context(error: FirnError, where: str, config: FirnConnectionConfig | None) -> FirnError:
    """The same kind of error with ``where`` added (secrets removed), for one clear task error."""
    message = f"{error} ({where})"
    if config is not None:
        message = config.redact(message)
    try:
        return type(error)(message)
    except TypeError:  # an error class with a richer constructor: keep the root kind
        return FirnError(message)


__all__ = ["ConnectionLike", "FirnConnectionConfig", "catalog_config", "with_context"]
