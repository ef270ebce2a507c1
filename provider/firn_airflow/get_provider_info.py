"""What Airflow's providers manager reads about this provider (entry point ``apache_airflow_provider``).

Validated at runtime against ``airflow/provider_info.schema.json``; ``package-name`` must equal
the distribution's canonical name or discovery fails. Every hook, operator, sensor and trigger
module is listed in the ``*_MODULES`` tuples below: adding one is one line there.

The table-health view is an Airflow plugin loaded from the ``plugins/`` folder
(``plugins/firn_table_health.py``); it is deliberately not registered here as well, because a
plugin registered twice is reported as an import error ("already registered").
"""

from __future__ import annotations

from typing import Any

from firn_airflow import __version__
from firn_airflow.constants import (
    ASSET_SCHEME,
    CONN_TYPE,
    DISTRIBUTION,
    EXTRA_CATALOG_NAME,
    EXTRA_PROPERTIES,
    EXTRA_S3_ACCESS_KEY_ID,
    EXTRA_S3_SECRET_ACCESS_KEY,
    EXTRA_S3_SESSION_TOKEN,
    EXTRA_WAREHOUSE,
    HOOK_NAME,
    INTEGRATION_NAME,
)

HOOK_MODULES: tuple[str, ...] = ("firn_airflow.hooks.firn",)
OPERATOR_MODULES: tuple[str, ...] = (
    "firn_airflow.operators.maintenance",
    "firn_airflow.operators.recommended",
    "firn_airflow.operators.spark_submit",
)
SENSOR_MODULES: tuple[str, ...] = ("firn_airflow.sensors.health", "firn_airflow.sensors.new_snapshot")
TRIGGER_MODULES: tuple[str, ...] = (
    "firn_airflow.triggers.health",
    "firn_airflow.triggers.new_snapshot",
    "firn_airflow.triggers.commit",
)

_OPTIONAL_STRING: dict[str, Any] = {"type": ["string", "null"]}

CONNECTION_TYPE: dict[str, Any] = {
    "hook-class-name": "firn_airflow.hooks.firn.FirnHook",
    "hook-name": HOOK_NAME,
    "connection-type": CONN_TYPE,
    # Airflow >= 3.2 builds the connection form from this metadata (no hook import needed).
    "ui-field-behaviour": {
        "hidden-fields": ["schema", "port"],
        "relabeling": {
            "host": "Catalog URI",
            "login": "Catalog database user",
            "password": "Catalog database password",
        },
        "placeholders": {
            "host": "sqlite:///warehouse/catalog.db or postgresql+psycopg://postgres:5432/firn",
            "login": "only when the catalog URI names no user",
            "password": "only when the catalog URI carries no password",
            EXTRA_WAREHOUSE: "warehouse, /data/warehouse or s3://bucket/warehouse",
            EXTRA_CATALOG_NAME: "default",
        },
    },
    "conn-fields": {
        EXTRA_WAREHOUSE: {
            "label": "Warehouse",
            "description": "Where new tables go: a local path or an s3:// / gs:// / hdfs:// location.",
            "schema": _OPTIONAL_STRING,
        },
        EXTRA_CATALOG_NAME: {
            "label": "Catalog name",
            "description": "The SQL catalog's catalog_name (the name the tables were created under).",
            "schema": {"type": ["string", "null"], "default": "default"},
        },
        EXTRA_PROPERTIES: {
            "label": "Catalog properties",
            "description": (
                "A JSON object of catalog and FileIO properties, e.g. "
                '{"s3.endpoint": "http://minio:9000", "s3.path-style-access": "true"}.'
            ),
            "schema": {"type": ["object", "null"]},
        },
        EXTRA_S3_ACCESS_KEY_ID: {
            "label": "Storage access key id",
            "description": "S3 (or S3-compatible) access key id: the s3.access-key-id property.",
            "schema": _OPTIONAL_STRING,
        },
        EXTRA_S3_SECRET_ACCESS_KEY: {
            "label": "Storage secret access key",
            "description": "S3 secret access key: the s3.secret-access-key property.",
            "schema": {"type": ["string", "null"], "format": "password"},
        },
        EXTRA_S3_SESSION_TOKEN: {
            "label": "Storage session token",
            "description": "Temporary S3 credentials' session token: the s3.session-token property.",
            "schema": {"type": ["string", "null"], "format": "password"},
        },
    },
}

ASSET_URIS: dict[str, Any] = {
    "schemes": [ASSET_SCHEME],
    "handler": "firn_airflow.assets.sanitize_uri",
    "factory": "firn_airflow.assets.create_asset",
}


def _modules(modules: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"integration-name": INTEGRATION_NAME, "python-modules": list(modules)}] if modules else []


def get_provider_info() -> dict[str, Any]:
    """The provider's metadata: name, version, integrations, modules, connection type, asset URIs."""
    info: dict[str, Any] = {
        "package-name": DISTRIBUTION,
        "name": "Firn",
        "description": (
            "Apache Iceberg (v1-v4) table maintenance with Firn: expire snapshots, flush root "
            "manifests, compact data files and rewrite deletion vectors as Airflow tasks."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION_NAME,
                "external-doc-url": "https://iceberg.apache.org/spec/",
                "tags": ["software"],
            }
        ],
        "hooks": _modules(HOOK_MODULES),
        "connection-types": [CONNECTION_TYPE],
        "asset-uris": [ASSET_URIS],
    }
    for key, modules in (
        ("operators", OPERATOR_MODULES),
        ("sensors", SENSOR_MODULES),
        ("triggers", TRIGGER_MODULES),
    ):
        if modules:
            info[key] = _modules(modules)
    return info


__all__ = ["get_provider_info"]
