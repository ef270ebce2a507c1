"""Destructive paths delete only the table's own files (issue 18 item 3; findings 2, 3, 4, 5).

A legacy catalog holds every unsafe arrangement the issue found: a table nested in another's
location, a table at its namespace's directory (``.``), adjacent tables (``t`` and ``t2``), a
symlink in a table's ``data/`` to a directory outside the warehouse, a registered copy of
another table's current metadata, and a statistics file outside the warehouse referenced by a
snapshot. Catalogs now refuse to create such states, so they are built the way a legacy
catalog got them: metadata written by the library's writers, catalog rows written with plain
SQL. (Their names are valid identifiers: what matters here is where they live, and ``a/b`` or
``.`` as a name is refused even when loading.)

Every destructive operation -- orphan removal with deletion (both phases), expiry with
cleanup, drop with purge, cleanup after a failed commit -- runs on every table; after each,
every other table still reads every row of every snapshot, and no file outside the tables'
own places is gone.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa

from firn.catalog.sql import SqlCatalog
from firn.catalog.sql_schema import TABLE_TYPE, iceberg_tables
from firn.core.create import new_table_metadata
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.metadata_builder import with_metadata_log
from firn.core.metadata_io import new_metadata_location, write_metadata
from firn.deletes.puffin import PuffinBlob, write_puffin
from firn.errors import FirnError
from firn.spec.snapshots import BlobMetadata, StatisticsFile
from firn.table.table import Table
from tests.fixtures.maintenance import files_on_disk, remove_orphans, rows_by_snapshot, soon_ms

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
DAY_S = 24 * 3600


def _rows(start: int) -> pa.Table:
    return pa.table({"id": [start, start + 1], "v": ["x", "y"]}, schema=SCHEMA)


@dataclasses.dataclass
class Legacy:
    """The catalog, its warehouse, where the outside files are, and which files are not any
    table's (they must survive everything)."""

    catalog: SqlCatalog
    uri: str
    warehouse: Path
    outside: Path
    foreign: set[str]  # files in no table's own places
    victim: str  # the file the symlink in db.linked's data/ points at
    stats: str  # the statistics file outside the warehouse

    def table(self, name: str) -> Table:
        return self.catalog.load_table(name)

    def names(self) -> list[str]:
        return sorted(".".join(i) for ns in ("db", "ns2") for i in self.catalog.list_tables(ns))


def _row(uri: str, ns: str, name: str, metadata_location: str) -> None:
    """A catalog row written as a legacy tool wrote it: plain SQL, no checks."""
    engine = sa.create_engine(uri)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(iceberg_tables).values(
                catalog_name="test",
                table_namespace=ns,
                table_name=name,
                metadata_location=metadata_location,
                previous_metadata_location=None,
                iceberg_type=TABLE_TYPE,
            )
        )
    engine.dispose()


def _legacy_table(env: Legacy, ns: str, name: str, location: str) -> Table:
    md = new_table_metadata(SCHEMA, location=location, properties={"format-version": "2"})
    metadata_location = new_metadata_location(md, None)
    write_metadata(env.catalog.io, md, metadata_location)
    _row(env.uri, ns, name, metadata_location)
    return env.table(f"{ns}.{name}")


def _swap(env: Legacy, t: Table, md: Any) -> None:
    """Point the table at new metadata the way a legacy catalog let any client: raw SQL."""
    md = with_metadata_log(md, t.metadata_location, t.metadata)
    location = new_metadata_location(md, t.metadata_location)
    write_metadata(t.io, md, location)
    engine = sa.create_engine(env.uri)
    with engine.begin() as conn:
        c = iceberg_tables.c
        conn.execute(
            sa.update(iceberg_tables)
            .where(c.table_namespace == t.identifier[0], c.table_name == t.identifier[1])
            .values(metadata_location=location, previous_metadata_location=t.metadata_location)
        )
    engine.dispose()
    t.refresh()


def _outside_stats(env: Legacy, t: Table) -> str:
    """A Puffin statistics file outside the warehouse, referenced by t's first snapshot."""
    first = t.snapshots()[0].snapshot_id
    path = str(env.outside / "stats" / f"{first}.stats")
    blob = PuffinBlob("apache-datasketches-theta-v1", b"\x00" * 16, fields=(1,), snapshot_id=first)
    footer = write_puffin(t.io.new_output(path), [blob])
    stats = StatisticsFile(
        first,
        path,
        t.io.new_input(path).length(),
        footer.footer_size_in_bytes,
        (BlobMetadata("apache-datasketches-theta-v1", first, 1, (1,)),),
    )
    _swap(env, t, dataclasses.replace(t.metadata, statistics=(stats,)))
    return path


def _age(root: Path, days: float = 5) -> None:
    old = time.time() - days * DAY_S
    for path in files_on_disk(root):
        os.utime(path, (old, old), follow_symlinks=False)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Legacy]:
    warehouse, outside = tmp_path / "warehouse", tmp_path / "outside"
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = SqlCatalog("test", uri, warehouse=str(warehouse))
    for ns in ("db", "ns2"):
        catalog.create_namespace(ns)
    victim = outside / "linked" / "victim.parquet"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"a file of another system, reachable through a symlink")
    env = Legacy(catalog, uri, warehouse, outside, set(), str(victim), "")
    wh = str(warehouse)
    tables = {
        "db.a": catalog.create_table("db.a", SCHEMA),
        "db.t": catalog.create_table("db.t", SCHEMA),
        "db.t2": catalog.create_table("db.t2", SCHEMA),  # adjacent to t: t is no prefix of it
        "db.linked": catalog.create_table("db.linked", SCHEMA),
        "db.stats": catalog.create_table("db.stats", SCHEMA),
        # Created before ns2.dot's legacy row: the catalog now refuses to place a table inside
        # another's location, as ns2.dot's covers the whole namespace directory.
        "ns2.x": catalog.create_table("ns2.x", SCHEMA),
        # Finding 2: "a/b" nested inside a; "." at its namespace directory, with a table below.
        "db.a_b": _legacy_table(env, "db", "a_b", f"{wh}/db/a/b"),
        "ns2.dot": _legacy_table(env, "ns2", "dot", f"{wh}/ns2"),
    }
    for i, t in enumerate(tables.values()):
        t.append(_rows(100 * i))
        t.append(_rows(100 * i + 10))
    # Finding 4: another table's current metadata registered under a new name.
    _row(uri, "db", "copy", tables["db.t"].metadata_location)
    # Finding 3: a symlink in a table's data/ to a directory outside the warehouse.
    os.symlink(victim.parent, f"{tables['db.linked'].location}/data/escape", target_is_directory=True)
    # Finding 5: a statistics file outside the warehouse, referenced by a snapshot.
    env.stats = _outside_stats(env, tables["db.stats"])
    # Files in no table's own places: in the warehouse next to the tables, and outside it.
    loose = warehouse / "db" / "loose.parquet"
    loose.write_bytes(b"in the namespace directory, in no table")
    env.foreign = {str(loose), *files_on_disk(outside)}
    _age(warehouse)
    _age(outside)
    yield env
    catalog.close()


def _snapshot_rows(env: Legacy) -> dict[str, dict[int, list[dict[str, Any]]]]:
    return {name: rows_by_snapshot(env.table(name)) for name in env.names()}


def _check(env: Legacy, before: dict[str, dict[int, list[dict[str, Any]]]], acted_on: str) -> None:
    """Every other table reads every row of every snapshot as before; nothing foreign is gone."""
    for name in env.names():
        if name == acted_on:
            continue
        assert rows_by_snapshot(env.table(name)) == before[name], (
            f"{name} changed by an operation on {acted_on}"
        )
    missing = {p for p in env.foreign if not os.path.lexists(p)}
    assert not missing, f"an operation on {acted_on} deleted {sorted(missing)}"


# What a run on each table may delete of its own: nothing where another entry's place equals or
# contains its own (t and its registered copy; a_b inside a's location, ns2.x inside ns2.dot's).
CAN_DELETE = {
    "db.a": True,
    "db.a_b": False,
    "db.copy": False,
    "db.linked": True,
    "db.stats": True,
    "db.t": False,
    "db.t2": True,
    "ns2.dot": True,
    "ns2.x": False,
}
NAMES = sorted(CAN_DELETE)


def test_the_legacy_catalog_is_what_the_issue_found(env: Legacy) -> None:
    assert env.names() == NAMES
    assert env.table("db.copy").location == env.table("db.t").location
    assert env.table("db.a_b").location.startswith(env.table("db.a").location + "/")
    assert env.table("ns2.x").location.startswith(env.table("ns2.dot").location + "/")
    assert os.path.islink(f"{env.table('db.linked').location}/data/escape")
    assert env.table("db.stats").metadata.statistics[0].statistics_path == env.stats


@pytest.mark.parametrize("name", NAMES)
def test_orphan_removal_on_every_table(env: Legacy, name: str) -> None:
    before = _snapshot_rows(env)
    t = env.table(name)
    stray = Path(t.location) / "data" / "stray.parquet"
    stray.write_bytes(b"an orphan of this table")
    _age(stray.parent, 4)
    result = remove_orphans(t, older_than=soon_ms(), force=True)
    _check(env, before, name)
    assert rows_by_snapshot(env.table(name)) == before[name]
    if CAN_DELETE[name]:
        assert str(stray) in result.deleted_file_locations and not stray.exists()
        assert result.deleted_file_locations == (str(stray),)  # its own orphan, nothing else
    else:
        assert stray.exists() and result.deleted_files == 0 and result.recorded_files == 0
    assert os.path.exists(env.victim) and os.path.exists(env.stats)


def test_orphan_listing_skips_nested_tables_and_symlinks(env: Legacy) -> None:
    a = env.table("db.a").maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
    assert a.other_entries > 0 and any("db.a_b" in p for p in a.other_places)
    assert not any("/a/b/" in o.path for o in a.orphans)
    linked = env.table("db.linked").maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
    assert not any("escape" in o.path for o in linked.orphans) and linked.orphans == ()
    dot = env.table("ns2.dot").maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
    assert dot.orphans == () and any("ns2.x" in p for p in dot.other_places)


@pytest.mark.parametrize("name", NAMES)
def test_expiry_with_cleanup_on_every_table(env: Legacy, name: str) -> None:
    before = _snapshot_rows(env)
    t = env.table(name)
    on_disk = files_on_disk(env.warehouse)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert result.expired_snapshot_ids
    _check(env, before, name)
    gone = on_disk - files_on_disk(env.warehouse)
    if CAN_DELETE[name]:
        assert result.deleted_files_count > 0 and gone
        assert all(p.startswith(t.location + "/") for p in gone)
    else:
        # Finding 4: the files the copy frees are the other table's: all kept, and said so.
        assert not gone and result.deleted_files_count == 0 and result.kept_outside_location > 0
        assert all("kept (other-entry)" in s.reason for s in result.skipped if s.item.startswith("/"))
    if name == "db.stats":
        # Finding 5: the statistics file outside the warehouse is kept and reported.
        assert os.path.exists(env.stats) and result.kept_outside_location == 1
        assert any(s.item == env.stats and "outside-location" in s.reason for s in result.skipped)


@pytest.mark.parametrize("name", NAMES)
def test_drop_with_purge_on_every_table(env: Legacy, name: str) -> None:
    before = _snapshot_rows(env)
    location = env.table(name).location
    on_disk = files_on_disk(env.warehouse)
    report = env.catalog.purge_table(name)
    assert name not in env.names()
    _check(env, before, name)
    gone = on_disk - files_on_disk(env.warehouse)
    assert set(report.deleted) >= gone and all(p.startswith(location + "/") for p in gone)
    if CAN_DELETE[name]:
        # Its data/ and metadata/ are empty now (a symlink there is neither followed nor listed).
        left = {
            p for p in files_on_disk(location) if p.startswith((f"{location}/data/", f"{location}/metadata/"))
        }
        assert gone and not left, sorted(left)[:3]
    else:
        assert not gone and report.kept and all(k.kind == "other-entry" for k in report.kept)


def test_purging_everything_in_turn_keeps_what_is_not_theirs(env: Legacy) -> None:
    # The copy first, while the table whose files it names exists; then the containing tables
    # while the nested ones still exist; each time the rest still reads.
    for name in ("db.copy", "db.a", "ns2.dot", "db.linked", "db.stats", "db.t", "db.a_b", "ns2.x", "db.t2"):
        before = _snapshot_rows(env)
        env.catalog.purge_table(name)
        _check(env, before, name)
    assert env.names() == []
    assert os.path.exists(env.victim) and os.path.exists(env.stats)


@pytest.mark.parametrize("name", NAMES)
def test_cleanup_after_a_failed_commit_on_every_table(env: Legacy, name: str) -> None:
    before = _snapshot_rows(env)
    t = env.table(name)
    on_disk = files_on_disk(env.warehouse)

    def refuse(commit: TableCommit) -> CommittedMetadata:
        raise FirnError("the catalog went away")

    t.commit_metadata = refuse  # type: ignore[method-assign]
    with pytest.raises(FirnError, match="the catalog went away"):
        t.append(_rows(999))
    # Everything the failed commit wrote (data files, manifests, manifest list) is gone again,
    # and nothing else.
    assert files_on_disk(env.warehouse) == on_disk
    _check(env, before, name)
