"""Confined locations (issue 18, item 2; ``firn.catalog.confinement``), on a real SQLite
catalog with its warehouse on the local file system: where tables and views may live, that
they never overlap, what register and commits may point at, and that a refused request
writes nothing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.handle import TableCommit
from firn.core.metadata_builder import apply_updates
from firn.core.updates import SetLocation, SetProperties, SetStatistics, TableUpdate
from firn.errors import NotFound, ValidationError
from firn.spec.snapshots import StatisticsFile
from firn.table.table import Table

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
SCHEMA = ROWS.schema


def _catalog(tmp_path: Path, **properties: str) -> SqlCatalog:
    return SqlCatalog(
        "c", f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"), properties=properties
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = _catalog(tmp_path)
    c.create_namespace("db")
    yield c
    c.close()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def _commit(catalog: SqlCatalog, table: Table, *updates: TableUpdate) -> None:
    """One commit through ``catalog.commit_table``, the path library and REST commits share."""
    base = table.metadata
    new = apply_updates(base, updates)
    catalog.commit_table(table.identifier, TableCommit(base, table.metadata_location, new, updates, ()))


# -- where a table may live ---------------------------------------------------------------------
def test_a_table_outside_the_warehouse_is_refused_and_nothing_is_written(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    for location, rule in (
        (f"{tmp_path}/other/t", "lies outside the places of catalog 'c'"),
        (f"file://{tmp_path}/other/t", "lies outside the places of catalog 'c'"),
        (f"{tmp_path}/wh2/t", "lies outside"),  # a sibling of the warehouse, not inside it
        ("relative/t", "is relative"),
        (f"{tmp_path}/wh/db/../../escape", "'..' segment"),
        (f"{tmp_path}/wh/db/%2E%2E/x", "'..' segment"),
        ("/proc/self/cwd/t", "lies outside"),
        ("s3://bucket/t", "lies outside"),
        (f"{tmp_path}/wh", "is the warehouse of catalog 'c' itself"),
        (f"{tmp_path}/wh/", "is the warehouse of catalog 'c' itself"),
        (f"file:{tmp_path}/wh", "is the warehouse of catalog 'c' itself"),
    ):
        with pytest.raises(ValidationError, match=rule):
            catalog.create_table("db.t", SCHEMA, location=location)
        with pytest.raises(ValidationError, match=rule):
            catalog.create_view("db.v", SCHEMA, "SELECT 1", location=location)
    assert _files(tmp_path) - before == set()
    assert catalog.list_tables("db") == [] and catalog.list_views("db") == []
    # Inside the warehouse, wherever: created (a file: URI and a plain path are one place).
    t = catalog.create_table("db.t", SCHEMA, location=f"file://{tmp_path}/wh/anywhere/t/")
    assert t.location == f"file://{tmp_path}/wh/anywhere/t"
    t.append(ROWS)
    assert catalog.load_table("db.t").to_arrow().num_rows == 3


def test_allowed_locations_widen_the_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The operator's own configuration: a relative entry means the working directory's.
    c = _catalog(tmp_path, **{"allowed-locations": f" {tmp_path}/shared/ ,relative-root, s3://bucket/tables"})
    try:
        assert c.location_rules.roots == (
            f"{tmp_path}/wh",
            f"{tmp_path}/shared",
            f"{tmp_path}/relative-root",
            "s3://bucket/tables",
        )
        c.create_namespace("db")
        assert (
            c.create_table("db.a", SCHEMA, location=f"{tmp_path}/shared/a").location == f"{tmp_path}/shared/a"
        )
        assert c.create_table("db.b", SCHEMA, location=f"{tmp_path}/relative-root/b").location.endswith("/b")
        # s3a names the same store as s3 (no S3 here: the rule alone is asked).
        assert c.location_rules.place(
            "table 'db.s3'", "location", "s3a://bucket/tables/t"
        ).location.startswith("s3a")
        for location in (f"{tmp_path}/sharedx/c", "s3://bucket/tablesx/c", "s3://other/tables/c"):
            with pytest.raises(ValidationError, match=r"lies outside .*allowed-locations"):
                c.create_table("db.c", SCHEMA, location=location)
    finally:
        c.close()


def test_no_table_contains_the_warehouse_even_inside_an_allowed_prefix(tmp_path: Path) -> None:
    c = _catalog(tmp_path, **{"allowed-locations": str(tmp_path)})
    try:
        c.create_namespace("db")
        with pytest.raises(ValidationError, match="contains the warehouse of catalog 'c' itself"):
            c.create_table("db.t", SCHEMA, location=str(tmp_path))
        assert c.create_table("db.t", SCHEMA, location=f"{tmp_path}/beside").location == f"{tmp_path}/beside"
    finally:
        c.close()


def test_an_invalid_allowed_locations_entry_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"'allowed-locations' entry .* '\.\.' segment"):
        _catalog(tmp_path, **{"allowed-locations": "s3://bucket/a/../b"})


def test_a_catalog_with_no_warehouse_and_no_allowed_locations_refuses_every_location(tmp_path: Path) -> None:
    c = SqlCatalog("bare", f"sqlite:///{tmp_path}/c.db")
    try:
        with pytest.raises(ValidationError, match="has no warehouse and no 'allowed-locations' property"):
            c.create_namespace("db", {"location": f"{tmp_path}/db"})
        c.create_namespace("db")
        with pytest.raises(ValidationError, match="has no warehouse and no 'allowed-locations' property"):
            c.create_table("db.t", SCHEMA, location=f"{tmp_path}/db/t")
        with pytest.raises(ValidationError, match="has no warehouse and the namespace has no 'location'"):
            c.create_table("db.t", SCHEMA)
        assert _files(tmp_path / "db") == set()
    finally:
        c.close()


def test_a_namespace_location_is_confined_and_places_its_tables(catalog: SqlCatalog, tmp_path: Path) -> None:
    cases = ((f"{tmp_path}/elsewhere", "lies outside"), ("rel", "is relative"), ("", "is empty"))
    for value, rule in cases:
        with pytest.raises(ValidationError, match=rule):
            catalog.create_namespace("ns", {"location": value})
    assert not catalog.namespace_exists("ns")
    catalog.create_namespace("ns")
    for value, rule in cases:
        with pytest.raises(ValidationError, match=rule):
            catalog.update_namespace_properties("ns", updates={"location": value})
    assert "location" not in catalog.load_namespace_properties("ns")
    catalog.update_namespace_properties("ns", updates={"location": f"{tmp_path}/wh/custom/ns/"})
    assert catalog.create_table("ns.t", SCHEMA).location == f"{tmp_path}/wh/custom/ns/t"
    # The warehouse itself may be a namespace's location (its tables are directories in it).
    catalog.create_namespace("top", {"location": f"{tmp_path}/wh"})
    assert catalog.create_table("top.t", SCHEMA).location == f"{tmp_path}/wh/t"


# -- tables and views never overlap --------------------------------------------------------------
def test_no_table_or_view_shares_contains_or_lies_inside_another(catalog: SqlCatalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    v = catalog.create_view("db.v", SCHEMA, "SELECT 1")
    before = _files(tmp_path)
    for location, relation in (
        (t.location, r"is the location .* of table 'db\.t'"),
        (f"{t.location}/nested", r"lies inside the location .* of table 'db\.t'"),
        (f"{t.location}/data", r"lies inside the location .* of table 'db\.t'"),
        (f"{tmp_path}/wh/db", r"contains the location .* of (table 'db\.t'|view 'db\.v')"),
        (v.location, r"is the location .* of view 'db\.v'"),
        (f"file://{t.location}", r"is the location .* of table 'db\.t'"),
    ):
        with pytest.raises(ValidationError, match=relation):
            catalog.create_table("db.x", SCHEMA, location=location)
        with pytest.raises(ValidationError, match=relation):
            catalog.create_view("db.y", SCHEMA, "SELECT 1", location=location)
    for key in ("write.data.path", "write.metadata.path"):
        with pytest.raises(ValidationError, match=rf"{key} .* lies inside the location .* of table 'db\.t'"):
            catalog.create_table("db.x", SCHEMA, properties={key: f"{t.location}/x"})
    assert _files(tmp_path) - before == set()
    # Adjacent is apart: t2 is not inside t, nor t inside t2.
    t2 = catalog.create_table("db.t2", SCHEMA, location=f"{t.location}2")
    t2.append(ROWS)
    assert t2.location == f"{t.location}2" and catalog.load_table("db.t2").to_arrow().num_rows == 3


def test_an_entry_whose_location_is_unknown_blocks_placing_others(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    """An entry whose metadata is neither in ``<location>/metadata`` nor readable could be
    anywhere, so no new place can be proven apart from it."""
    odd = catalog.create_table(
        "db.odd", SCHEMA, properties={"write.metadata.path": f"{tmp_path}/wh/odd-meta"}
    )
    Path(odd.metadata_location).unlink()
    fresh = _catalog(tmp_path)  # no parsed metadata cached (``catalog`` still knows the file)
    try:
        with pytest.raises(ValidationError, match=r"the location of table 'db\.odd' is unknown"):
            fresh.create_table("db.t", SCHEMA)
        fresh.drop_table("db.odd")  # without purge: its files are not read
        fresh.create_table("db.t", SCHEMA)
    finally:
        fresh.close()


def test_a_metadata_directory_named_metadata_is_the_one_in_the_location(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    """Else the catalog, which reads an entry's location from its metadata file's path, would
    think the table lives at the directory's parent."""
    with pytest.raises(ValidationError, match="is named 'metadata' but is not the one in its location"):
        catalog.create_table(
            "db.t", SCHEMA, properties={"write.metadata.path": f"{tmp_path}/wh/meta/t/metadata"}
        )
    t = catalog.create_table(
        "db.t", SCHEMA, properties={"write.metadata.path": f"{tmp_path}/wh/db/t/metadata/"}
    )
    assert t.metadata_location.startswith(f"{tmp_path}/wh/db/t/metadata/")


# -- register ------------------------------------------------------------------------------------
def test_register_refuses_another_tables_metadata(catalog: SqlCatalog, tmp_path: Path) -> None:
    """Finding 4: the copy shares the victim's files; purging or expiring it deleted them."""
    victim = catalog.create_table("db.victim", SCHEMA)
    victim.append(ROWS)
    victim = catalog.load_table("db.victim")
    with pytest.raises(
        ValidationError, match=r"of table 'db\.copy' is the location .* of table 'db\.victim'"
    ):
        catalog.register_table("db.copy", victim.metadata_location)
    # An older metadata file of the victim names the same location: refused too.
    first = catalog.load_table("db.victim").metadata.metadata_log[0].metadata_file
    with pytest.raises(ValidationError, match=r"is the location .* of table 'db\.victim'"):
        catalog.register_table("db.copy", first)
    assert catalog.list_tables("db") == [("db", "victim")]
    with pytest.raises(NotFound):
        catalog.drop_table("db.copy", purge=True)
    assert catalog.load_table("db.victim").to_arrow().num_rows == 3


def test_register_confines_the_metadata_file_before_reading_it(catalog: SqlCatalog, tmp_path: Path) -> None:
    """Outside the catalog's places a metadata location is refused unread: not ``NotFound``
    for a missing file, no endless read of ``/dev/zero``."""
    for location in (
        f"{tmp_path}/nowhere/00000-x.metadata.json",
        "/dev/zero",
        "relative.json",
        "/etc/passwd",
    ):
        with pytest.raises(ValidationError, match="metadata"):
            catalog.register_table("db.r", location)
    # Inside: read (and a missing file is NotFound).
    with pytest.raises(NotFound):
        catalog.register_table("db.r", f"{tmp_path}/wh/nowhere/00000-x.metadata.json")


def test_register_wants_the_metadata_file_inside_the_tables_places(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(ROWS)
    t = catalog.load_table("db.t")
    catalog.drop_table("db.t")  # files kept
    moved = tmp_path / "wh" / "loose" / "v.metadata.json"
    moved.parent.mkdir(parents=True)
    shutil.copy(t.metadata_location, moved)
    with pytest.raises(ValidationError, match=r"metadata file .* lies outside the table's own places"):
        catalog.register_table("db.t", str(moved))
    again = catalog.register_table("db.again", t.metadata_location)
    assert again.to_arrow().num_rows == 3


# -- commits -------------------------------------------------------------------------------------
def test_commits_that_move_a_table_are_checked(catalog: SqlCatalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    other = catalog.create_table("db.other", SCHEMA)
    t.append(ROWS)
    t = catalog.load_table("db.t")
    for update, rule in (
        (SetLocation(f"{tmp_path}/outside"), "lies outside"),
        (SetLocation(other.location), r"is the location .* of table 'db\.other'"),
        (SetLocation(f"{tmp_path}/wh"), "is the warehouse"),
        (SetLocation("relative"), "is relative"),
        (SetProperties({"write.data.path": f"{tmp_path}/outside/data"}), "write.data.path .* lies outside"),
        (
            SetProperties({"write.data.path": f"{other.location}/data"}),
            r"lies inside .* of table 'db\.other'",
        ),
        (SetProperties({"write.metadata.path": f"{tmp_path}/wh/x/metadata"}), "is named 'metadata'"),
    ):
        with pytest.raises(ValidationError, match=rule):
            _commit(catalog, t, update)
    assert catalog.load_table("db.t").metadata_location == t.metadata_location
    # A move inside the warehouse, apart from others: committed; new files go there.
    _commit(catalog, t, SetLocation(f"{tmp_path}/wh/moved/t"))
    moved = catalog.load_table("db.t")
    assert moved.location == f"{tmp_path}/wh/moved/t"
    assert moved.metadata_location.startswith(f"{tmp_path}/wh/moved/t/metadata/")
    moved.append(ROWS)
    assert catalog.load_table("db.t").to_arrow().num_rows == 6


def test_a_commit_may_reference_files_only_inside_the_table(catalog: SqlCatalog, tmp_path: Path) -> None:
    """Finding 5 in the library: statistics anywhere were accepted, and expiry deleted them."""
    t = catalog.create_table("db.t", SCHEMA, properties={"write.data.path": f"{tmp_path}/wh/t-data"})
    t2 = catalog.create_table("db.t2", SCHEMA)
    t.append(ROWS)
    t = catalog.load_table("db.t")
    snapshot = t.metadata.snapshots[-1].snapshot_id

    def stats(path: str) -> SetStatistics:
        return SetStatistics(StatisticsFile(snapshot, path, 1, 1))

    for path in (f"{tmp_path}/precious", f"{t2.location}/metadata/s.stats", f"{tmp_path}/wh/s.stats"):
        with pytest.raises(ValidationError, match="lies outside the table's own places"):
            _commit(catalog, t, stats(path))
    # Its own places: the location and the write paths.
    _commit(catalog, t, stats(f"{t.location}/metadata/s.stats"))
    t = catalog.load_table("db.t")
    _commit(catalog, t, stats(f"{tmp_path}/wh/t-data/s.stats"))
    assert [s.statistics_path for s in catalog.load_table("db.t").metadata.statistics] == [
        f"{tmp_path}/wh/t-data/s.stats"
    ]


def test_a_table_from_before_the_rules_keeps_working(tmp_path: Path) -> None:
    """A table placed where the catalog no longer allows (the operator narrowed
    ``allowed-locations``) still takes commits that move nothing."""
    wide = _catalog(tmp_path, **{"allowed-locations": f"{tmp_path}/old"})
    wide.create_namespace("db")
    wide.create_table("db.t", SCHEMA, location=f"{tmp_path}/old/t")
    wide.close()
    narrow = _catalog(tmp_path)
    try:
        t = narrow.load_table("db.t")
        t.append(ROWS)
        t = narrow.load_table("db.t")
        _commit(
            narrow,
            t,
            SetStatistics(StatisticsFile(t.metadata.snapshots[-1].snapshot_id, f"{t.location}/s", 1, 1)),
        )
        assert narrow.load_table("db.t").to_arrow().num_rows == 3
        with pytest.raises(ValidationError, match="lies outside"):
            _commit(narrow, narrow.load_table("db.t"), SetLocation(f"{tmp_path}/old/t2"))
    finally:
        narrow.close()


def test_rename_keeps_the_files_and_the_old_place_stays_taken(catalog: SqlCatalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(ROWS)
    catalog.create_namespace("other")
    renamed = catalog.rename_table("db.t", "other.u")
    assert renamed.location == t.location and renamed.to_arrow().num_rows == 3
    # The default location of a new db.t is still the renamed table's: refused, not shared.
    with pytest.raises(ValidationError, match=r"of table 'db\.t' is the location .* of table 'other\.u'"):
        catalog.create_table("db.t", SCHEMA)
    assert catalog.create_table("db.t", SCHEMA, location=f"{t.location}-new").to_arrow().num_rows == 0


# -- views ---------------------------------------------------------------------------------------
def test_view_changes_and_registration_are_checked(catalog: SqlCatalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    v = catalog.create_view("db.v", SCHEMA, "SELECT 1")
    before = _files(tmp_path)
    for path, rule in (
        (f"{tmp_path}/outside/meta", "lies outside"),
        (f"{t.location}/vmeta", r"lies inside the location .* of table 'db\.t'"),
        (f"{tmp_path}/wh/x/metadata", "is named 'metadata'"),
    ):
        with pytest.raises(ValidationError, match=rule):
            catalog.update_view_properties("db.v", {"write.metadata.path": path})
    assert _files(tmp_path) - before == set()
    assert catalog.load_view("db.v").metadata_location == v.metadata_location
    with pytest.raises(ValidationError, match=r"of view 'db\.w' is the location .* of view 'db\.v'"):
        catalog.register_view("db.w", v.metadata_location)
    with pytest.raises(ValidationError, match="lies outside"):
        catalog.register_view("db.w", f"{tmp_path}/nowhere/00000-x.metadata.json")
    # Inside its own location: fine.
    catalog.update_view_properties("db.v", {"write.metadata.path": f"{v.location}/vmeta"})
    assert catalog.load_view("db.v").metadata_location.startswith(f"{v.location}/vmeta/")
