"""Small tables for the ref, retention and conflict tests: ``id``/``grp`` rows and helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from firn.catalog.base_catalog import BaseCatalog
from firn.table.table import Table

ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("grp", pa.string())])

# Tests must not wait for real backoff; conflicts retry quickly and often.
FAST_RETRY = {
    "commit.retry.num-retries": "20",
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "20",
}


def rows(ids: Iterable[int], grp: str = "a") -> pa.Table:
    """Rows with the given ids, all in group ``grp``."""
    values = list(ids)
    return pa.table({"id": pa.array(values, pa.int64()), "grp": [grp] * len(values)}, schema=ARROW_SCHEMA)


def make_table(
    catalog: BaseCatalog,
    name: str = "db.t",
    *,
    format_version: int = 2,
    partitioned: bool = False,
    properties: Mapping[str, str] | None = None,
) -> Table:
    """A table (namespace created on demand), never V4: tests pin the format version."""
    ns = name.rsplit(".", 1)[0]
    if not catalog.namespace_exists(ns):
        catalog.create_namespace(ns)
    props = {"format-version": str(format_version), **FAST_RETRY, **(properties or {})}
    kwargs: dict[str, Any] = {"properties": props}
    if partitioned:
        kwargs["partition_spec"] = [("grp", "identity")]
    return catalog.create_table(name, ARROW_SCHEMA, **kwargs)


def ids(table: Table, **scan: Any) -> list[int]:
    """The sorted ids a scan returns (``ref=``, ``snapshot_id=``... as for ``table.scan``)."""
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())


__all__ = ["ARROW_SCHEMA", "FAST_RETRY", "ids", "make_table", "rows"]
