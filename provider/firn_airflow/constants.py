"""Names the provider shares between its hook, assets, plugin and (later) operators.

The connection's ``extra`` keys are the ``conn-fields`` declared in
:mod:`firn_airflow.get_provider_info`; the asset-event keys are the contract between the
maintenance operators (which write an event's ``extra``) and the table-health view (which
reads it).
"""

from __future__ import annotations

DISTRIBUTION = "airflow-provider-firn"
INTEGRATION_NAME = "Firn"

# -- connection --------------------------------------------------------------------------------
CONN_TYPE = "firn"
DEFAULT_CONN_ID = "firn_default"
HOOK_NAME = "Firn"

# ``extra`` keys (the declarative conn-fields). The catalog URI is the connection's ``host``;
# ``login``/``password`` are the catalog database's credentials when the URI carries none; the
# ``s3_*`` storage credentials become the FileIO's ``s3.*`` catalog properties.
EXTRA_WAREHOUSE = "warehouse"
EXTRA_CATALOG_NAME = "catalog_name"
EXTRA_PROPERTIES = "properties"
EXTRA_S3_ACCESS_KEY_ID = "s3_access_key_id"
EXTRA_S3_SECRET_ACCESS_KEY = "s3_secret_access_key"
EXTRA_S3_SESSION_TOKEN = "s3_session_token"

# The SQL catalog keys its rows by catalog name; ``firn.load_catalog`` defaults to this one.
DEFAULT_CATALOG_NAME = "default"

# -- assets ------------------------------------------------------------------------------------
ASSET_SCHEME = "firn"
ASSET_GROUP = "firn"
# A table's maintenance results go to its maintenance asset (``...?kind=maintenance``), apart
# from the table's data asset (firn_airflow.assets).
MAINTENANCE_KIND = "maintenance"

# Keys of a maintenance asset event's ``extra``: the operation that ran, its typed result
# (``result.to_dict()``) and the table's health measured after it (``table.health().to_dict()``).
EVENT_OPERATION = "operation"
EVENT_RESULT = "result"
EVENT_HEALTH = "health"

__all__ = [
    "ASSET_GROUP",
    "ASSET_SCHEME",
    "CONN_TYPE",
    "DEFAULT_CATALOG_NAME",
    "DEFAULT_CONN_ID",
    "DISTRIBUTION",
    "EVENT_HEALTH",
    "EVENT_OPERATION",
    "EVENT_RESULT",
    "EXTRA_CATALOG_NAME",
    "EXTRA_PROPERTIES",
    "EXTRA_S3_ACCESS_KEY_ID",
    "EXTRA_S3_SECRET_ACCESS_KEY",
    "EXTRA_S3_SESSION_TOKEN",
    "EXTRA_WAREHOUSE",
    "HOOK_NAME",
    "INTEGRATION_NAME",
    "MAINTENANCE_KIND",
]
