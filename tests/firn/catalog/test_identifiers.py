"""One identifier rule for every catalog (issue 18, item 1): ``firn.catalog.identifiers``.

The rule itself, then every catalog operation that takes a name, for the SQL (SQLite) and
in-memory catalogs; the REST client and server are covered over HTTP in
``tests/firn/rest/test_names_and_locations.py``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.base import to_identifier
from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.identifiers import MAX_NAME_BYTES, check_name, name_problem
from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64())])

REFUSED = {
    "": "is empty",
    "   ": "is empty",
    ".": "relative path segment",
    "..": "relative path segment",
    "%2e%2E": "relative path segment",
    "%2E": "relative path segment",
    "a/b": "path separator",
    "a%2Fb": "path separator",
    "../../../elsewhere/escape": "path separator",
    "a\\b": "path separator",
    "a%5cb": "path separator",
    "nul\x00": "control character",
    "tab\t": "control character",
    "del\x7f": "control character",
    "c1\x85": "control character",
    "\ud800": "lone surrogate",
    "x\udfff": "lone surrogate",
    "x" * (MAX_NAME_BYTES + 1): f"the limit is {MAX_NAME_BYTES}",
    # 128 characters, 256 bytes: the limit is on bytes, what a file system counts.
    "é" * 128: "256 bytes long",
}
ALLOWED = [
    "t",
    "my.table",
    "with space",
    "é日本",
    "..x",
    "x..",
    ".hidden",
    "a%b",
    "x" * MAX_NAME_BYTES,
    "é" * 127,
]


@pytest.mark.parametrize(("name", "problem"), REFUSED.items(), ids=[repr(n)[:20] for n in REFUSED])
def test_the_rule_refuses_paths_controls_surrogates_and_long_names(name: str, problem: str) -> None:
    reason = name_problem(name)
    assert reason is not None and problem in reason
    with pytest.raises(ValidationError, match="invalid table name") as info:
        check_name(name, what="table name")
    # The message is always valid UTF-8 (a REST error body must be), whatever the name held.
    str(info.value).encode("utf-8")


@pytest.mark.parametrize("name", ALLOWED, ids=[repr(n)[:20] for n in ALLOWED])
def test_the_rule_allows_names_that_are_one_path_segment(name: str) -> None:
    assert name_problem(name) is None
    assert check_name(name) == name


def test_to_identifier_applies_the_rule_to_every_part() -> None:
    assert to_identifier("a.b.t") == ("a", "b", "t")
    assert to_identifier(("db", "my.table")) == ("db", "my.table")
    with pytest.raises(ValidationError, match=r"invalid identifier 'a\.\.t': the name '' is empty"):
        to_identifier("a..t")
    with pytest.raises(ValidationError, match=r"the name '\.\.' is a relative path segment"):
        to_identifier(("db", ".."))
    with pytest.raises(ValidationError, match="must be a string"):
        to_identifier(("db", 5))  # type: ignore[arg-type]


@pytest.fixture(params=["sql", "memory"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> BaseCatalog:
    if request.param == "sql":
        c: BaseCatalog = SqlCatalog("c", f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    else:
        c = InMemoryCatalog("c")
    c.create_namespace("db")
    c.create_table("db.t", SCHEMA)
    c.create_view("db.v", SCHEMA, "SELECT 1")  # type: ignore[attr-defined]
    return c


@pytest.mark.parametrize("name", ["..", ".", "a/b", "a\\b", "%2e%2e", "\ud800", "n\x00", "x" * 256])
def test_every_catalog_operation_refuses_them(catalog: BaseCatalog, name: str) -> None:
    t_metadata = catalog.load_metadata_location("db.t")
    operations = {
        "create_namespace": lambda: catalog.create_namespace((name,)),
        "create_child_namespace": lambda: catalog.create_namespace(("db", name)),
        "create_table": lambda: catalog.create_table(("db", name), SCHEMA),
        "create_table_in": lambda: catalog.create_table((name, "t"), SCHEMA),
        "register_table": lambda: catalog.register_table(("db", name), t_metadata),
        "rename_table": lambda: catalog.rename_table("db.t", ("db", name)),
        "rename_table_to_namespace": lambda: catalog.rename_table("db.t", (name, "t")),
        "load_table": lambda: catalog.load_table(("db", name)),
        "drop_table": lambda: catalog.drop_table(("db", name)),
        "create_view": lambda: catalog.create_view(("db", name), SCHEMA, "SELECT 1"),  # type: ignore[attr-defined]
        "rename_view": lambda: catalog.rename_view("db.v", ("db", name)),  # type: ignore[attr-defined]
        "list_tables": lambda: catalog.list_tables((name,)),
    }
    for operation, call in operations.items():
        with pytest.raises(ValidationError, match="invalid identifier"):
            call()
            pytest.fail(f"{operation} accepted {name!r}")
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_tables("db") == [("db", "t")]
    assert catalog.list_views("db") == [("db", "v")]  # type: ignore[attr-defined]


def test_a_dot_inside_a_namespace_level_stays_refused(catalog: BaseCatalog) -> None:
    """Namespaces are stored dot-joined (Java's JDBC layout): a level may not hold a dot, and
    the joined name must fit one path segment."""
    with pytest.raises(ValidationError, match=r"may not contain '\.'"):
        catalog.create_namespace(("a.b",))
    with pytest.raises(ValidationError, match="once its levels are dot-joined"):
        catalog.create_namespace(("x" * 200, "y" * 100))
    catalog.create_table(("db", "my.table"), SCHEMA)
    assert ("db", "my.table") in catalog.list_tables("db")
