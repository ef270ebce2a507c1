"""Property test: random sequences of appends, deletes (positions, DVs, equality deletes) and
maintenance (compaction, delete and manifest rewrites, root flushes, expiry, orphan removal)
keep a table's rows equal to an in-memory model of them, on v2, v3 and V4: the current rows
after every step, and the rows of every snapshot still in the metadata (time travel)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firn.deletes.writers import write_equality_delete_files
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import local, remove_orphans, soon_ms

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32())])

OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 30)),
    st.tuples(st.just("delete"), st.integers(1, 6)),
    st.tuples(st.just("eq-delete"), st.integers(1, 6)),
    st.tuples(st.just("compact"), st.integers(1, 3), st.booleans(), st.booleans()),
    st.tuples(st.just("deletes"), st.booleans()),
    st.tuples(st.just("manifests")),
    st.tuples(st.just("flush")),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("orphans")),
)


def _victims(model: set[int], seed: int) -> list[int]:
    return [x for x in sorted(model) if (x * 7 + seed) % 6 == 0][:8]


def _apply(t: Any, op: tuple[Any, ...], model: set[int], next_id: int, version: int) -> int:
    kind = op[0]
    if kind == "append":
        ids = list(range(next_id, next_id + op[1]))
        t.append(pa.table({"id": ids, "part": [i % 3 for i in ids]}, schema=SCHEMA))
        model.update(ids)
        return next_id + op[1]
    if kind == "delete":
        victims = _victims(model, op[1])
        if victims:
            t.delete(f"id in ({', '.join(map(str, victims))})")
            model.difference_update(victims)
    elif kind == "eq-delete":
        victims = _victims(model, op[1])
        if victims:
            rows = pa.table({"id": victims, "part": [v % 3 for v in victims]}, schema=SCHEMA)
            files = write_equality_delete_files(t.io, t.metadata, rows, ["id"])
            t.row_delta().add_deletes(files).commit()
            model.difference_update(victims)
    elif kind == "compact":
        options: dict[str, Any] = {"min_input_files": op[1], "rewrite_all": op[2]}
        if op[3]:
            options["sort_order"] = "id DESC"
        t.maintenance.rewrite_data_files(**options).run()
    elif kind == "deletes":
        if version >= 3:
            t.maintenance.rewrite_deletion_vectors(rewrite_all=op[1], min_input_files=1).run()
        else:
            t.maintenance.rewrite_position_delete_files(rewrite_all=op[1], min_input_files=1).run()
    elif kind == "manifests":
        t.maintenance.rewrite_manifests().run()
    elif kind == "flush":
        if version >= 4:
            t.maintenance.flush_root(force=True).run()
    elif kind == "expire":
        t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=op[1]).run()
    else:
        stray = Path(local(t.location)) / "data" / f"stray-{next_id}.parquet"
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_bytes(b"written by a writer that never committed")
        result = remove_orphans(t, older_than=soon_ms(), force=True)  # recorded, then deleted
        assert {f"file://{stray}", str(stray)} & set(result.deleted_file_locations)
        assert not stray.exists()
    return next_id


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from([2, 3, 4]), ops=st.lists(OPS, min_size=3, max_size=9))
def test_random_histories_match_the_model(version: int, ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        catalog = make_sqlite_catalog(Path(d))
        catalog.create_namespace("db")
        t = catalog.create_table(
            "db.t",
            schema=SCHEMA,
            partition_spec=[("part", "identity")],
            properties={
                "format-version": str(version),
                "write.delete.mode": "merge-on-read",
                "commit.root.max-added-files": "2",
            },
        )
        model: set[int] = set()
        at: dict[int, list[int]] = {}  # the model's rows at each snapshot
        next_id = 0
        for op in ops:
            next_id = _apply(t, op, model, next_id, version)
            got = sorted(t.scan(columns=["id"]).to_arrow().column("id").to_pylist())
            assert got == sorted(model), op
            for snap in t.metadata.snapshots:  # what this step committed reads as the model now
                at.setdefault(snap.snapshot_id, sorted(model))
            if op[0] in ("expire", "orphans"):
                _time_travel(t, at, op)
        _time_travel(t, at, "end")
        catalog.close()


def _time_travel(t: Any, at: dict[int, list[int]], step: object) -> None:
    for snap in t.metadata.snapshots:
        got = sorted(t.scan(snapshot_id=snap.snapshot_id, columns=["id"]).to_arrow().column("id").to_pylist())
        assert got == at[snap.snapshot_id], (step, snap.snapshot_id)
