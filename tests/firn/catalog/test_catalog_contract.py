"""The Catalog contract, run against SQLite, the in-memory catalog and PostgreSQL."""

from __future__ import annotations

import threading

import pytest

from firn.catalog.base import Catalog, PropertiesUpdateSummary
from firn.catalog.base_catalog import BaseCatalog
from firn.core.metadata_io import new_metadata_location, write_metadata
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    InvalidMetadata,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotFound,
    ValidationError,
)
from tests.fixtures.catalogs import simple_schema


def test_is_a_catalog(any_catalog: BaseCatalog) -> None:
    assert isinstance(any_catalog, Catalog)
    assert any_catalog.io is not None and any_catalog.warehouse


# -- namespaces ------------------------------------------------------------------------------
def test_create_list_and_exists(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    assert c.list_namespaces() == []
    c.create_namespace("db")
    c.create_namespace(("a", "b"), {"owner": "me"})
    c.create_namespace("a.c")
    assert c.list_namespaces() == [("a",), ("db",)]
    assert c.list_namespaces("a") == [("a", "b"), ("a", "c")]
    assert c.list_namespaces(("a", "b")) == []
    assert c.namespace_exists("db") and c.namespace_exists(("a", "b"))
    assert c.namespace_exists("a")  # implied by its children (JDBC catalog semantics)
    assert not c.namespace_exists("nope") and not c.namespace_exists("a.b.c")
    with pytest.raises(AlreadyExists):
        c.create_namespace("db")
    with pytest.raises(AlreadyExists):
        c.create_namespace("a")
    with pytest.raises(NoSuchNamespace):
        c.list_namespaces("nope")


def test_like_wildcards_in_names_match_literally(any_catalog: BaseCatalog) -> None:
    any_catalog.create_namespace("axb.c")
    any_catalog.create_namespace("a%")
    assert not any_catalog.namespace_exists("a_b")
    assert not any_catalog.namespace_exists("a")
    assert any_catalog.list_namespaces() == [("a%",), ("axb",)]


def test_namespace_without_properties_exists(any_catalog: BaseCatalog) -> None:
    any_catalog.create_namespace("empty")
    assert any_catalog.load_namespace_properties("empty") == {}
    assert any_catalog.list_namespaces() == [("empty",)]


def test_namespace_properties(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db", {"owner": "alice", "comment": "x"})
    assert c.load_namespace_properties("db") == {"owner": "alice", "comment": "x"}
    summary = c.update_namespace_properties(
        "db", removals={"comment", "ghost"}, updates={"owner": "bob", "k": "v"}
    )
    assert summary == PropertiesUpdateSummary(
        removed=("comment",), updated=("k", "owner"), missing=("ghost",)
    )
    assert c.load_namespace_properties("db") == {"owner": "bob", "k": "v"}
    c.update_namespace_properties("db", removals={"owner", "k"})
    assert c.namespace_exists("db") and c.load_namespace_properties("db") == {}
    with pytest.raises(ValidationError, match="both removed and updated"):
        c.update_namespace_properties("db", removals={"a"}, updates={"a": "1"})
    with pytest.raises(ValidationError, match="reserved"):
        c.update_namespace_properties("db", updates={"exists": "false"})
    with pytest.raises(ValidationError, match="reserved"):
        c.create_namespace("other", {"exists": "true"})
    with pytest.raises(NoSuchNamespace):
        c.load_namespace_properties("nope")
    with pytest.raises(NoSuchNamespace):
        c.update_namespace_properties("nope", updates={"a": "b"})


def test_drop_namespace(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    with pytest.raises(NoSuchNamespace):
        c.drop_namespace("nope")
    c.create_namespace("db")
    c.create_table("db.t", simple_schema())
    with pytest.raises(NamespaceNotEmpty, match=r"db\.t"):
        c.drop_namespace("db")
    c.drop_table("db.t")
    c.drop_namespace("db")
    assert not c.namespace_exists("db")
    c.create_namespace("p.child")  # "p" now exists implicitly, as in the JDBC catalog
    with pytest.raises(AlreadyExists):
        c.create_namespace("p")
    with pytest.raises(NamespaceNotEmpty, match="child"):
        c.drop_namespace("p")
    c.drop_namespace("p.child")
    assert c.list_namespaces() == []


@pytest.mark.parametrize("bad", ["", "a..b", ("a.b", "c"), ("a", "")])
def test_invalid_namespaces(any_catalog: BaseCatalog, bad: str | tuple[str, ...]) -> None:
    with pytest.raises(ValidationError):
        any_catalog.create_namespace(bad)


# -- tables ----------------------------------------------------------------------------------
def test_create_and_load_table(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    table = c.create_table("db.events", simple_schema(), properties={"owner": "me"}, format_version=2)
    assert table.identifier == ("db", "events")
    assert table.metadata.location == f"{c.warehouse}/db/events"
    assert table.metadata_location.startswith(f"{c.warehouse}/db/events/metadata/00000-")
    assert c.io.new_input(table.metadata_location).exists()
    assert table.metadata.properties["owner"] == "me"
    assert c.list_tables("db") == [("db", "events")]
    assert c.table_exists("db.events") and not c.table_exists("db.other")
    loaded = c.load_table(("db", "events"))
    assert loaded.metadata_location == table.metadata_location
    assert loaded.metadata.table_uuid == table.metadata.table_uuid
    assert loaded.metadata.schema() == simple_schema()
    assert c.load_metadata_location("db.events") == table.metadata_location


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_every_format_version_round_trips(any_catalog: BaseCatalog, version: int) -> None:
    any_catalog.create_namespace("db")
    any_catalog.create_table("db.t", simple_schema(), format_version=version)
    assert any_catalog.load_table("db.t").metadata.format_version == version


def test_create_table_errors(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    with pytest.raises(NoSuchNamespace):
        c.create_table("nope.t", simple_schema())
    with pytest.raises(ValidationError, match="namespace"):
        c.create_table("t", simple_schema())
    c.create_namespace("db")
    first = c.create_table("db.t", simple_schema())
    with pytest.raises(AlreadyExists):
        c.create_table("db.t", simple_schema())
    # The failed create left no metadata file behind.
    files = [i.location for i in c.io.list_prefix(f"{c.warehouse}/db/t")]
    assert files == [first.metadata_location]


def test_table_locations(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db", {"location": f"{c.warehouse}/custom-db/"})
    c.create_namespace("a.b")
    assert c.create_table("db.t", simple_schema()).metadata.location == f"{c.warehouse}/custom-db/t"
    assert c.create_table("a.b.t", simple_schema()).metadata.location == f"{c.warehouse}/a.b/t"
    explicit = f"{c.warehouse}/elsewhere/x"
    assert c.create_table("a.b.x", simple_schema(), location=explicit + "/").metadata.location == explicit


def test_missing_tables(any_catalog: BaseCatalog) -> None:
    any_catalog.create_namespace("db")
    for call in (
        lambda: any_catalog.load_table("db.t"),
        lambda: any_catalog.load_metadata_location("db.t"),
        lambda: any_catalog.drop_table("db.t"),
        lambda: any_catalog.rename_table("db.t", "db.u"),
    ):
        with pytest.raises(NoSuchTable, match=r"db\.t"):
            call()
    with pytest.raises(NoSuchNamespace):
        any_catalog.list_tables("nope")


def test_drop_table_keeps_files_unless_purged(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    kept = c.create_table("db.kept", simple_schema())
    c.drop_table("db.kept")
    assert not c.table_exists("db.kept")
    assert c.io.new_input(kept.metadata_location).exists()

    table = c.create_table("db.t", simple_schema())
    root = table.metadata.location
    for rel in ("data/p=1/a.parquet", "data/b.parquet", "metadata/snap-1.avro"):
        c.io.new_output(f"{root}/{rel}").write(b"x")
    c.io.new_output(f"{root}/README").write(b"outside metadata/ and data/")
    neighbour = c.create_table("db.t2", simple_schema())
    c.drop_table("db.t", purge=True)
    assert not c.table_exists("db.t")
    assert [i.location for i in c.io.list_prefix(root)] == [f"{root}/README"]
    assert c.io.new_input(neighbour.metadata_location).exists()


def test_rename_table(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    c.create_namespace("other")
    table = c.create_table("db.t", simple_schema())
    c.create_table("db.taken", simple_schema())
    with pytest.raises(NoSuchNamespace):
        c.rename_table("db.t", "nope.t")
    with pytest.raises(AlreadyExists):
        c.rename_table("db.t", "db.taken")
    renamed = c.rename_table("db.t", "other.moved")
    assert renamed.identifier == ("other", "moved")
    assert renamed.metadata_location == table.metadata_location  # files do not move
    assert not c.table_exists("db.t")
    assert c.list_tables("other") == [("other", "moved")]


def test_register_table(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    original = c.create_table("db.t", simple_schema(), format_version=3)
    c.drop_table("db.t")
    registered = c.register_table("db.again", original.metadata_location)
    assert registered.metadata.table_uuid == original.metadata.table_uuid
    assert c.load_table("db.again").metadata_location == original.metadata_location
    with pytest.raises(AlreadyExists):
        c.register_table("db.again", original.metadata_location)
    with pytest.raises(NotFound):
        c.register_table("db.missing", f"{c.warehouse}/nothing/here.metadata.json")
    garbage = f"{c.warehouse}/garbage.metadata.json"
    c.io.new_output(garbage).write(b"{not json")
    with pytest.raises(InvalidMetadata, match="garbage"):
        c.register_table("db.bad", garbage)
    with pytest.raises(NoSuchNamespace):
        c.register_table("nope.t", original.metadata_location)
    assert c.list_tables("db") == [("db", "again")]


# -- commits ---------------------------------------------------------------------------------
def _next_version(catalog: BaseCatalog, identifier: str) -> tuple[str, str]:
    """Write a new metadata file for the table; returns (expected, new) locations."""
    table = catalog.load_table(identifier)
    new = new_metadata_location(table.metadata, table.metadata_location)
    write_metadata(catalog.io, table.metadata, new)
    return table.metadata_location, new


def test_commit_swaps_the_pointer(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    expected, new = _next_version(c, "db.t")
    c.swap_metadata_location("db.t", expected, new, table.metadata)
    assert c.load_metadata_location("db.t") == new
    assert "/00001-" in new
    assert c.load_table("db.t").metadata_location == new


def test_commit_conflicts(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    base, first = _next_version(c, "db.t")
    second = first.replace("/00001-", "/00001-b")
    c.swap_metadata_location("db.t", base, first, table.metadata)
    with pytest.raises(CommitConflict, match=r"db\.t"):
        c.swap_metadata_location("db.t", base, second, table.metadata)  # stale base
    assert c.load_metadata_location("db.t") == first
    with pytest.raises(ValidationError):
        c.swap_metadata_location("db.t", first, first, table.metadata)
    c.drop_table("db.t")
    with pytest.raises(NoSuchTable):
        c.swap_metadata_location("db.t", first, second, table.metadata)


def test_concurrent_threads_never_lose_a_swap(any_catalog: BaseCatalog) -> None:
    c = any_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    initial = table.metadata_location
    wins: list[tuple[str, str]] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        done = 0
        attempt = 0
        while done < 10:
            attempt += 1
            current = c.load_metadata_location("db.t")
            new = f"{c.warehouse}/db/t/metadata/w{n}-{attempt}.metadata.json"
            try:
                c.swap_metadata_location("db.t", current, new, table.metadata)
            except CommitConflict:
                continue
            with lock:
                wins.append((current, new))
            done += 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(wins) == 40
    chain = dict(wins)
    assert len(chain) == 40  # no two swaps from the same base
    cursor, steps = initial, 0
    while cursor in chain:
        cursor, steps = chain[cursor], steps + 1
    assert steps == 40 and cursor == c.load_metadata_location("db.t")
