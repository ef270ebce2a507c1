"""Property tests (issue 18, item 9): random names and locations never resolve outside their
namespace and warehouse.

Random namespace levels, table names and locations, built from the pieces that once escaped
(``..``, ``.``, separators, percent-encodings, control characters, lone surrogates) and from
arbitrary text, are thrown at a real SQLite catalog with its warehouse on the local disk.
Each create is either refused with ``ValidationError`` or makes a table that

* lies inside the warehouse and is not the warehouse itself;
* when placed by default, sits at exactly ``<warehouse>/<namespace>/<name>``: its name is
  one path segment, inside its namespace's directory;
* never equals, contains or lies inside another table's location;

and no file is written anywhere but in the warehouse. The warehouse sits several levels down
a temporary directory so that even a regression climbing with ``..`` writes only there.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firn.catalog.base_catalog import namespace_to_string
from firn.catalog.identifiers import name_problem
from firn.catalog.sql import SqlCatalog
from firn.errors import AlreadyExists, ValidationError
from firn.spec.locations import location_key, locations_overlap

SCHEMA = pa.schema([pa.field("id", pa.int64())])
EXAMPLES = int(os.environ.get("FIRN_PROPERTY_EXAMPLES", "60"))

PIECES = [
    "..",
    ".",
    "/",
    "\\",
    "%2e",
    "%2E%2e",
    "%2f",
    "a",
    "t",
    "t2",
    "data",
    "metadata",
    " ",
    "\x00",
    "\ud800",
    "é",
]
_piece = st.sampled_from(PIECES) | st.text(max_size=3)
NAMES = st.lists(_piece, max_size=4).map("".join) | st.sampled_from(["t", "t2", "a", "a.b", ".."])
# At most four segments: a regression that climbs cannot leave the temporary directory.
_segments = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), min_size=0, max_size=4)
_prefixes = st.sampled_from(["{wh}", "file://{wh}", "{wh}/db", "{out}", "relative", "", "s3://bucket"])
LOCATIONS = st.none() | st.builds(lambda prefix, parts: "/".join([prefix, *parts]), _prefixes, _segments)
OPERATIONS = st.lists(st.tuples(NAMES, NAMES, LOCATIONS), min_size=1, max_size=6)


def _files_outside(root: Path, warehouse: Path) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and warehouse not in p.parents and not p.name.startswith("c.db")
    ]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(OPERATIONS)
def test_random_names_and_locations_never_resolve_outside_their_namespace_and_warehouse(
    operations: list[tuple[str, str, str | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp, "l1", "l2", "l3", "l4", "l5")
        warehouse, outside, cwd = base / "wh", base / "out", base / "cwd"
        cwd.mkdir(parents=True)
        catalog = SqlCatalog("p", f"sqlite:///{base}/c.db", warehouse=str(warehouse))
        wh_key = location_key(str(warehouse))
        created: dict[tuple[str, ...], str] = {}
        try:
            with contextlib.chdir(cwd):
                for level, name, location in operations:
                    given = location.format(wh=warehouse, out=outside) if location is not None else None
                    try:
                        if not catalog.namespace_exists((level,)):
                            catalog.create_namespace((level,))
                        table = catalog.create_table((level, name), SCHEMA, location=given)
                    except (ValidationError, AlreadyExists):
                        continue
                    # Only names the rule accepts get this far.
                    assert name_problem(level) is None and name_problem(name) is None
                    key = location_key(table.location)
                    assert wh_key.contains(key) and key != wh_key, (given, table.location)
                    if given is None:
                        # Placed by default: one segment per name, inside the namespace directory.
                        assert key.segments == (*wh_key.segments, namespace_to_string((level,)), name)
                    for other, other_location in created.items():
                        assert not locations_overlap(table.location, other_location), (other, table.location)
                    created[table.identifier] = table.location
            assert _files_outside(Path(tmp), warehouse) == []
            assert {e.identifier for e in catalog.entry_locations()} == set(created)
        finally:
            catalog.close()


@given(NAMES)
def test_an_accepted_name_is_exactly_one_path_segment(name: str) -> None:
    """The identifier rule alone: whatever a name holds, if it is accepted it adds exactly one
    segment below its namespace, in a plain path and in a URI."""
    if name_problem(name) is not None:
        return
    for root in ("/wh/ns", "s3://bucket/wh/ns", "file:///wh/ns"):
        key = location_key(f"{root}/{name}")
        assert key.segments == (*location_key(root).segments, name)
