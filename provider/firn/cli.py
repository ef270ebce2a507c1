"""The ``firn`` command.

Each command is a plain function decorated for click, so it can be registered on another
group as it is (``group.add_command(serve)``).
"""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="airflow-provider-firn", prog_name="firn")
def main() -> None:
    """Firn: Apache Iceberg tables in Python."""


def _pairs(values: tuple[str, ...], option: str, sep: str = "=") -> dict[str, str]:
    out = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key:
            raise click.BadParameter(f"expected KEY{sep}VALUE, got {value!r}", param_hint=option)
        out[key] = rest
    return out


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
    "--token",
    envvar="FIRN_REST_TOKEN",
    default=None,
    help="Bearer token clients must send (env FIRN_REST_TOKEN).",
)
@click.option(
    "--oauth-client",
    "oauth_clients",
    multiple=True,
    metavar="ID:SECRET",
    help="An OAuth2 client allowed to obtain tokens at /v1/oauth/tokens (repeatable).",
)
@click.option("--prefix", default=None, help="Serve the catalog under /v1/<prefix>/.")
@click.option(
    "--catalog-property",
    "catalog_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Property of the served catalog.",
)
@click.option(
    "--table-default",
    "table_defaults",
    multiple=True,
    metavar="KEY=VALUE",
    help="Property for tables created over REST that do not set it, e.g. format-version=2.",
)
@click.option("--log-level", default="info", show_default=True, help="uvicorn log level.")
def serve(
    catalog_uri: str,
    warehouse: str | None,
    host: str,
    port: int,
    token: str | None,
    oauth_clients: tuple[str, ...],
    prefix: str | None,
    catalog_properties: tuple[str, ...],
    table_defaults: tuple[str, ...],
    log_level: str,
) -> None:
    """Serve a catalog over the Iceberg REST protocol."""
    try:
        from firn.rest.serve import serve as run
    except ImportError as e:  # FastAPI and uvicorn come with the "rest" extra
        raise click.ClickException(
            f"firn serve needs the 'rest' extra (pip install 'airflow-provider-firn[rest]'): {e}"
        ) from e

    run(
        catalog_uri,
        warehouse=warehouse,
        host=host,
        port=port,
        token=token,
        oauth_clients=_pairs(oauth_clients, "--oauth-client", sep=":"),
        prefix=prefix,
        catalog_properties=_pairs(catalog_properties, "--catalog-property"),
        table_defaults=_pairs(table_defaults, "--table-default"),
        log_level=log_level,
    )


main.add_command(serve)

if __name__ == "__main__":  # pragma: no cover - `python -m firn.cli`
    main()
