"""``firn serve``: run the REST catalog server (uvicorn) for a catalog URI.

Secrets come from files or the environment, never the command line, where every user of the
machine can read them (``ps``, ``/proc/<pid>/cmdline``): the bearer token from ``--token-file``
or ``FIRN_REST_TOKEN``, OAuth2 clients (``client_id:secret``) from ``--oauth-client-file`` or
``FIRN_REST_OAUTH_CLIENTS`` (:func:`load_secrets`). ``--token`` and ``--oauth-client`` still
work but warn.

Exposure (:func:`check_exposure`): without authentication the server binds to a loopback
address only, unless ``insecure`` says otherwise; it warns whenever it runs without
authentication, and when it listens beyond this machine over plain HTTP.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from firn.catalog.loader import load_catalog
from firn.errors import ValidationError
from firn.rest.app import app
from firn.rest.security import DEFAULT_MAX_REQUEST_BYTES, LOOPBACK_HOSTS, is_loopback

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8181  # the port Iceberg's REST catalog examples use
TOKEN_ENV = "FIRN_REST_TOKEN"
OAUTH_CLIENTS_ENV = "FIRN_REST_OAUTH_CLIENTS"
_WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
_ARGV_WARNING = (
    "{option} puts a secret on the command line, where every user of this machine can read it "
    "(ps, /proc); use {instead}"
)


@dataclass(frozen=True)
class ServerSecrets:
    """The credentials clients must present, and what was worth warning about reading them."""

    token: str | None = field(default=None, repr=False)
    oauth_clients: Mapping[str, str] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()

    @property
    def authenticated(self) -> bool:
        return self.token is not None or bool(self.oauth_clients)


def _read_secret_file(path: str, what: str, warnings: list[str]) -> str:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ValidationError(f"{what} {path} is not a regular file")
        with open(path, encoding="utf-8") as f:
            text = f.read(1024 * 1024)
    except OSError as e:
        raise ValidationError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"the {what} {path} is not UTF-8 text") from None
    if st.st_mode & 0o077:
        warnings.append(
            f"the {what} {path} can be read by other users (mode {stat.filemode(st.st_mode)}): chmod 600 it"
        )
    return text


def _client_pairs(entries: Iterable[tuple[str, str]], clients: dict[str, str]) -> None:
    """Add ``(where, "id:secret")`` entries to ``clients``; errors name where, never the secret."""
    for where, entry in entries:
        client_id, sep, secret = entry.partition(":")
        if not sep or not client_id.strip() or not secret:
            raise ValidationError(f"{where}: an OAuth2 client must be written ID:SECRET")
        client_id = client_id.strip()
        if clients.get(client_id, secret) != secret:
            raise ValidationError(
                f"{where}: OAuth2 client {client_id!r} is given twice with different secrets"
            )
        clients[client_id] = secret


def load_secrets(
    *,
    token: str | None = None,
    token_file: str | None = None,
    oauth_clients: Sequence[str] = (),
    oauth_client_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServerSecrets:
    """The server's credentials from its options and ``environ`` (default ``os.environ``).

    The token comes from exactly one of ``token_file`` (its text, trailing whitespace
    stripped), ``FIRN_REST_TOKEN`` or ``token`` (a command-line value: warned about). OAuth2
    clients come from all of ``oauth_client_file`` (one ``id:secret`` a line; ``#`` comments),
    ``FIRN_REST_OAUTH_CLIENTS`` (``id:secret`` entries separated by whitespace) and
    ``oauth_clients`` (command-line values: warned about).
    """
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    sources = {
        "--token-file": _read_secret_file(token_file, "token file", warnings).strip() if token_file else None,
        TOKEN_ENV: env.get(TOKEN_ENV) or None,
        "--token": token or None,
    }
    given = [name for name, value in sources.items() if value is not None]
    if len(given) > 1:
        raise ValidationError(f"the token is given more than once ({', '.join(given)}): give it one way")
    if sources["--token-file"] == "":
        raise ValidationError(f"the token file {token_file} is empty")
    if sources["--token"] is not None:
        warnings.append(_ARGV_WARNING.format(option="--token", instead=f"--token-file or {TOKEN_ENV}"))
    clients: dict[str, str] = {}
    if oauth_client_file:
        lines = _read_secret_file(oauth_client_file, "OAuth2 client file", warnings).splitlines()
        _client_pairs(
            (
                (f"{oauth_client_file} line {n}", line.strip())
                for n, line in enumerate(lines, 1)
                if line.strip() and not line.lstrip().startswith("#")
            ),
            clients,
        )
    _client_pairs(((OAUTH_CLIENTS_ENV, e) for e in env.get(OAUTH_CLIENTS_ENV, "").split()), clients)
    _client_pairs((("--oauth-client", e) for e in oauth_clients), clients)
    if oauth_clients:
        warnings.append(
            _ARGV_WARNING.format(
                option="--oauth-client", instead=f"--oauth-client-file or {OAUTH_CLIENTS_ENV}"
            )
        )
    token_value = next((v for v in sources.values() if v is not None), None)
    return ServerSecrets(token=token_value, oauth_clients=clients, warnings=tuple(warnings))


def default_allowed_hosts(bind: str) -> tuple[str, ...]:
    """The Host names served by default: loopback names, plus the bind address itself when it
    is one specific address (clients then name it in their URLs)."""
    name = bind.strip().strip("[]").lower()
    if name in _WILDCARD_ADDRESSES or is_loopback(name):
        return LOOPBACK_HOSTS
    return (*LOOPBACK_HOSTS, name)


def check_exposure(
    host: str, port: int, *, authenticated: bool, insecure: bool, allowed_hosts: Sequence[str]
) -> list[str]:
    """Refuse to serve without authentication beyond this machine unless ``insecure``; return
    the warnings worth printing at start."""
    local = is_loopback(host)
    warnings: list[str] = []
    if not authenticated:
        if not local and not insecure:
            raise ValidationError(
                f"refusing to serve {host}:{port} without authentication: anyone who can reach it could "
                f"read, change and drop every table. Set a token (--token-file or {TOKEN_ENV}) or OAuth2 "
                f"clients (--oauth-client-file or {OAUTH_CLIENTS_ENV}), or pass --insecure"
            )
        warnings.append(
            f"serving without authentication: every client that can reach {host}:{port} may read, "
            "change and drop every table"
        )
    if not local:
        warnings.append(
            f"listening on {host}:{port} over plain HTTP: put a TLS proxy in front so that tokens "
            "and data do not cross the network in clear"
        )
        if set(allowed_hosts) <= set(LOOPBACK_HOSTS):
            warnings.append(
                "only loopback names are allowed in the Host header: add --allowed-host NAME for each "
                "name clients use to reach this server"
            )
    return warnings


def serve(
    catalog_uri: str,
    *,
    warehouse: str | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    oauth_clients: Mapping[str, str] | None = None,
    prefix: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    table_defaults: Mapping[str, str] | None = None,
    allowed_hosts: Sequence[str] | None = None,
    insecure: bool = False,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    log_level: str = "info",
    warn: Callable[[str], None] | None = None,
) -> None:
    """Open the catalog and serve it until interrupted (blocks). ``allowed_hosts`` defaults to
    :func:`default_allowed_hosts`; warnings (:func:`check_exposure`) go to ``warn`` (default:
    this module's logger)."""
    import uvicorn

    hosts = tuple(allowed_hosts) if allowed_hosts else default_allowed_hosts(host)
    authenticated = token is not None or bool(oauth_clients)
    notes = check_exposure(host, port, authenticated=authenticated, insecure=insecure, allowed_hosts=hosts)
    catalog = load_catalog(catalog_uri, warehouse=warehouse, **dict(catalog_properties or {}))
    try:
        application = app(
            catalog,
            token=token,
            oauth_clients=oauth_clients,
            prefix=prefix,
            table_defaults=table_defaults,
            allowed_hosts=hosts,
            max_request_bytes=max_request_bytes,
        )
        for note in notes:
            (warn or logger.warning)(note)
        uvicorn.run(application, host=host, port=port, log_level=log_level)
    finally:
        close = getattr(catalog, "close", None)
        if callable(close):
            close()


__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_PORT",
    "OAUTH_CLIENTS_ENV",
    "TOKEN_ENV",
    "ServerSecrets",
    "check_exposure",
    "default_allowed_hosts",
    "load_secrets",
    "serve",
]
