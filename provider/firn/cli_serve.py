"""``firn serve``: a catalog over the Iceberg REST protocol (:mod:`firn.rest`)."""

from __future__ import annotations

import click

from firn.cli_errors import cli_errors, pairs


@click.command("serve")
@click.option(
    "--catalog", "catalog_uri", required=True, help="Catalog URI to serve, e.g. sqlite:///catalog.db."
)
@click.option("--warehouse", default=None, help="Where the served catalog puts new tables.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8181, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--token-file",
    metavar="PATH",
    default=None,
    help="File holding the bearer token clients must send (or env FIRN_REST_TOKEN).",
)
@click.option(
    "--token",
    default=None,
    help="The bearer token itself: discouraged, as every local user can read the command line.",
)
@click.option(
    "--oauth-client-file",
    metavar="PATH",
    default=None,
    help="File of OAuth2 clients that may obtain tokens, one ID:SECRET a line "
    "(or env FIRN_REST_OAUTH_CLIENTS, whitespace-separated).",
)
@click.option(
    "--oauth-client",
    "oauth_clients",
    multiple=True,
    metavar="ID:SECRET",
    help="An OAuth2 client on the command line (repeatable): discouraged, like --token.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A name clients may send in the Host header (repeatable; '*' for any). "
    "Default: loopback names and the --host address.",
)
@click.option(
    "--insecure",
    is_flag=True,
    default=False,
    help="Allow serving a non-loopback address without authentication.",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(1),
    default=None,
    help="The largest request body accepted (default 32 MiB).",
)
@click.option("--prefix", default=None, help="Serve the catalog under /v1/<prefix>/.")
@click.option(
    "--catalog-property",
    "catalog_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Property of the served catalog (table-default.KEY=VALUE sets a default of new tables).",
)
@click.option(
    "--table-default",
    "table_defaults",
    multiple=True,
    metavar="KEY=VALUE",
    help="Property for tables created over REST that do not set it, e.g. format-version=3 "
    "(the format's default is 2).",
)
@click.option("--log-level", default="info", show_default=True, help="uvicorn log level.")
def serve(
    catalog_uri: str,
    warehouse: str | None,
    host: str,
    port: int,
    token_file: str | None,
    token: str | None,
    oauth_client_file: str | None,
    oauth_clients: tuple[str, ...],
    allowed_hosts: tuple[str, ...],
    insecure: bool,
    max_request_bytes: int | None,
    prefix: str | None,
    catalog_properties: tuple[str, ...],
    table_defaults: tuple[str, ...],
    log_level: str,
) -> None:
    """Serve a catalog over the Iceberg REST protocol.

    Secrets are read from files or the environment, never the command line: the token from
    --token-file or FIRN_REST_TOKEN, OAuth2 clients from --oauth-client-file or
    FIRN_REST_OAUTH_CLIENTS. Without either, only a loopback --host is served (or --insecure).
    """
    try:
        from firn.rest import serve as rest_serve
    except ImportError as e:  # FastAPI and uvicorn come with the "rest" extra
        raise click.ClickException(
            f"firn serve needs the 'rest' extra (pip install 'airflow-provider-firn[rest]'): {e}"
        ) from e

    def warn(message: str) -> None:
        click.echo(f"firn serve: warning: {message}", err=True)

    with cli_errors():
        secrets = rest_serve.load_secrets(
            token=token,
            token_file=token_file,
            oauth_clients=oauth_clients,
            oauth_client_file=oauth_client_file,
        )
        for message in secrets.warnings:
            warn(message)
        properties = pairs(catalog_properties, "--catalog-property")
        rest_serve.serve(
            catalog_uri,
            warehouse=warehouse,
            host=host,
            port=port,
            token=secrets.token,
            oauth_clients=secrets.oauth_clients,
            prefix=prefix,
            catalog_properties=properties,
            table_defaults=pairs(table_defaults, "--table-default"),
            allowed_hosts=allowed_hosts or None,
            insecure=insecure,
            max_request_bytes=max_request_bytes or rest_serve.DEFAULT_MAX_REQUEST_BYTES,
            log_level=log_level,
            warn=warn,
        )


__all__ = ["serve"]
