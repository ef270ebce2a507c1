"""Helpers for V4 tests: build files and commits directly, and render a snapshot's tree with
stable labels (``D1``, ``M1``, ``MDV(M1)``, ``DV(D1)``) so tests can compare with seed 004."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

import firn
from firn.core.actions.append import AppendFiles
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.metadata_io import metadata_dir
from firn.core.transaction import Transaction
from firn.core.v4.reader import root_table
from firn.core.writer import write_data_files
from firn.deletes.bitmap import PositionBitmap
from firn.deletes.dv import write_dv_puffin
from firn.manifests.v4_io import read_v4_manifest
from firn.spec.content import DataFile, EntryStatus, FileContent, FileFormat
from firn.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
KIND = {0: "D", 1: "DV", 2: "EQ", 3: "M", 4: "DM", 5: "MDV"}


def new_table(tmp_path: Any, name: str = "t", **props: str) -> Table:
    catalog = firn.load_catalog(f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    properties = {"format-version": "4", **props}
    return catalog.create_table(f"db.{name}", schema=SCHEMA, properties=properties)


class Labels:
    """Human labels for files and manifests, assigned in order of appearance."""

    def __init__(self) -> None:
        self.by_path: dict[str, str] = {}
        self._counters: dict[str, int] = {}

    def name(self, path: str, label: str) -> None:
        self.by_path[path] = label

    def of(self, path: str | None, prefix: str) -> str:
        if path is None:
            return "?"
        if path not in self.by_path:
            self._counters[prefix] = self._counters.get(prefix, 0) + 1
            self.by_path[path] = f"{prefix}{self._counters[prefix]}"
        return self.by_path[path]


def data_files(table: Table, labels: Labels, names: Sequence[str], start_id: int = 0) -> list[DataFile]:
    """One single-row data file per name (not committed)."""
    out = []
    for i, name in enumerate(names):
        rows = pa.table({"id": [start_id + i], "name": [name]}, schema=SCHEMA)
        (f,) = write_data_files(table.io, table.metadata, rows)
        labels.name(f.file_path, name)
        out.append(f)
    return out


def dv_for(
    table: Table, labels: Labels, data_file: DataFile, positions: Iterable[int], label: str
) -> DataFile:
    """A deletion vector for ``data_file`` in its own Puffin file (not committed)."""
    import uuid

    loc = f"{metadata_dir(table.metadata).rsplit('/', 1)[0]}/data/{uuid.uuid4()}.puffin"
    bitmap = PositionBitmap.from_positions(np.asarray(list(positions), dtype=np.int64))
    written = write_dv_puffin(table.io.new_output(loc), [(data_file.file_path, bitmap)])
    blob = written.dvs[0]
    labels.name(f"dv:{loc}", label)
    f = DataFile(
        FileContent.POSITION_DELETES,
        loc,
        FileFormat.PUFFIN,
        data_file.partition,
        blob.cardinality,
        written.file_size_in_bytes,
        data_file.spec_id,
        referenced_data_file=data_file.file_path,
        content_offset=blob.offset,
        content_size_in_bytes=blob.length,
    )
    labels.name(loc, label)
    return f


def commit_append(table: Table, files: Sequence[DataFile], *, compact: bool = False) -> None:
    action = AppendFiles(files)
    action.compact_manifests = compact
    Transaction(table).add_action(action).commit()


def commit_change(
    table: Table,
    *,
    add: Sequence[DataFile] = (),
    remove: Sequence[DataFile] = (),
    add_deletes: Sequence[DataFile] = (),
    remove_deletes: Sequence[DataFile] = (),
) -> None:
    snap = table.current_snapshot()
    action = OverwriteFiles(
        starting_snapshot_id=snap.snapshot_id if snap else None,
        added_data=add,
        removed_data=remove,
        added_deletes=add_deletes,
        removed_deletes=remove_deletes,
    )
    Transaction(table).add_action(action).commit()


def set_props(table: Table, **props: str) -> None:
    table.set_properties({k.replace("_", "-"): v for k, v in props.items()})


def tree(table: Table, labels: Labels, snapshot_id: int | None = None) -> dict[str, Any]:
    """{"root": sorted [(label, STATUS)], "leaves": {leaf label: [(label, STATUS), ...]}}."""
    md = table.metadata
    snap = md.snapshot(snapshot_id) if snapshot_id is not None else md.current_snapshot()
    root = root_table(table.io, md, snap)
    rows = root.select(["content_type", "location", "version_info", "referenced_file"]).to_pylist()
    out_root = []
    leaves: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        ct = r["content_type"]
        status = EntryStatus(r["version_info"]["status"]).name
        if ct in (3, 4):
            label = labels.of(r["location"], KIND[ct])
            leaf = read_v4_manifest(table.io, r["location"])
            lrows = leaf.select(["content_type", "location", "version_info"]).to_pylist()
            leaves[label] = [
                (
                    labels.of(x["location"], KIND[x["content_type"]]),
                    EntryStatus(x["version_info"]["status"]).name,
                )
                for x in lrows
            ]
        elif ct == 5:
            label = f"MDV({labels.of(r['referenced_file'], 'M')})"
        else:
            label = labels.of(r["location"], KIND[ct])
        out_root.append((label, status))
    return {"root": sorted(out_root), "leaves": leaves}


def ids(table: Table, **scan: Any) -> list[int]:
    return sorted(table.scan(**scan).to_arrow()["id"].to_pylist())
