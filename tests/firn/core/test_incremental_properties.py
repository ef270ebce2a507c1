"""Property test: on random histories (appends, copy-on-write and merge-on-read deletes, upserts
and overwrites, equality deletes, position deletes / DVs added and removed, compaction, delete
and manifest rewrites, V4 root flushes, expiry), incremental and changelog reads of random
ranges equal a brute-force diff of full scans (``tests.fixtures.changelog``), on v2, v3 and V4:

* the incremental append scan = what each ``append`` snapshot of the range added;
* the changelog = each non-``replace`` snapshot's rows against its parent's;
* the changelog with carry-over rows kept, once identical pairs cancel, = the same;
* net changes = the table at the end against the table at the start.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firn.deletes.writers import write_equality_delete_files
from firn.errors import NotFound
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.changelog import History, cancel_pairs, changelog_rows, net_rows, row_tuples
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.row_deletes import live_deletes

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32()), pa.field("v", pa.string())]
)

OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 12)),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("upsert"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("overwrite"), st.integers(0, 2)),
    st.tuples(st.just("eq-delete"), st.integers(0, 5)),
    st.tuples(st.just("positions"), st.integers(0, 5)),
    st.tuples(st.just("undelete"), st.integers(0, 5)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("rewrite-deletes")),
    st.tuples(st.just("manifests")),
    st.tuples(st.just("flush")),
    st.tuples(st.just("expire"), st.integers(1, 3)),
)


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {"id": ids, "part": [i % 3 for i in ids], "v": [f"{tag}-{i}" for i in ids]}, schema=SCHEMA
    )


def _victims(t: Table, seed: int) -> list[int]:
    # An "undelete" can bring back a row an upsert replaced, so an id may be live twice: the
    # victims are distinct ids (upsert input may hold each key once).
    ids = sorted(set(t.scan(columns=["id"]).to_arrow().column("id").to_pylist()))
    return [x for x in ids if (x * 7 + seed) % 5 == 0][:6]


def _apply(t: Table, op: tuple[Any, ...], step: int, next_id: int) -> int:
    kind = op[0]
    tag = f"s{step}"
    if kind == "append":
        t.append(_rows(list(range(next_id, next_id + op[1])), tag))
        return next_id + op[1]
    if kind == "delete":
        victims = _victims(t, op[1])
        if victims:
            t.delete(f"id in ({', '.join(map(str, victims))})")
    elif kind == "upsert":
        new = list(range(next_id, next_id + op[2]))
        t.upsert(_rows(_victims(t, op[1]) + new, tag), ["id"])
        return next_id + op[2]
    elif kind == "overwrite":
        new = list(range(next_id, next_id + 4))
        t.overwrite(_rows([i for i in new if i % 3 == op[1]] or new[:1], tag), f"part = {op[1]}")
        return next_id + 4
    elif kind == "eq-delete":
        victims = _victims(t, op[1])
        if victims:
            files = write_equality_delete_files(t.io, t.metadata, _rows(victims, "x"), ["id"])
            t.row_delta().add_deletes(files).commit()
    elif kind == "positions":
        live = t.scan(columns=["_file", "_pos"]).to_arrow().to_pylist()
        if live:
            path = live[op[1] % len(live)]["_file"]
            positions = [r["_pos"] for r in live if r["_file"] == path][op[1] % 2 :: 2]
            t.row_delta().delete_rows_at(path, positions).commit()
    elif kind == "undelete":
        deletes = live_deletes(t)
        if deletes:
            t.row_delta().remove_deletes([deletes[op[1] % len(deletes)]]).commit()
    elif kind == "compact":
        t.maintenance.rewrite_data_files(min_input_files=1, rewrite_all=op[1]).run()
    elif kind == "rewrite-deletes":
        if t.format_version >= 3:
            t.maintenance.rewrite_deletion_vectors(rewrite_all=True, min_input_files=1).run()
        else:
            t.maintenance.rewrite_position_delete_files(rewrite_all=True, min_input_files=1).run()
    elif kind == "manifests":
        t.maintenance.rewrite_manifests().run()
    elif kind == "flush":
        if t.format_version >= 4:
            t.maintenance.flush_root(force=True).run()
    else:
        t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=op[1]).run()
    return next_id


def _check_range(t: Table, history: History, start: int | None, end: int) -> None:
    where = f"range ({start}, {end}]"
    appended = t.scan(from_snapshot_id=start, to_snapshot_id=end).to_arrow()
    assert sorted(row_tuples(appended)) == sorted(history.expected_appends(start, end).elements()), where
    first = history.between(start, end)[0] if start != end else None
    if first is not None and start is not None and t.metadata.snapshot_by_id(start) is None:
        # The start was expired: the first snapshot's DELETEs may need files only the start
        # referenced. Then the changelog is refused, and reading from that snapshot works.
        (changes,) = t.changes(start, first.snapshot_id)
        if first.summary.operation is not Operation.REPLACE and (
            changes.removed_data_files or changes.removed_delete_files
        ):
            with pytest.raises(NotFound, match=f"start the changelog at snapshot {first.snapshot_id}"):
                t.changelog(from_snapshot_id=start, to_snapshot_id=end).to_arrow()
            _check_range(t, history, first.snapshot_id, end)
            return
    expected = history.expected_changelog(start, end)
    got = t.changelog(from_snapshot_id=start, to_snapshot_id=end).to_arrow()
    assert changelog_rows(got) == expected, where
    raw = t.changelog(from_snapshot_id=start, to_snapshot_id=end, remove_carry_over=False).to_arrow()
    assert cancel_pairs(changelog_rows(raw)) == expected, where
    net = t.changelog(from_snapshot_id=start, to_snapshot_id=end, net_changes=True).to_arrow()
    assert net_rows(net) == history.expected_net(start, end), where


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    version=st.sampled_from([2, 3, 4]),
    mode=st.sampled_from(["merge-on-read", "copy-on-write"]),
    ops=st.lists(OPS, min_size=3, max_size=8),
    data=st.data(),
)
def test_incremental_reads_equal_diffs_of_full_scans(
    version: int, mode: str, ops: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as d:
        catalog = make_sqlite_catalog(Path(d))
        catalog.create_namespace("db")
        t = catalog.create_table(
            "db.t",
            schema=SCHEMA,
            partition_spec=[("part", "identity")],
            properties={
                "format-version": str(version),
                "write.delete.mode": mode,
                "write.update.mode": mode,
                "write.merge.mode": mode,
                "commit.root.max-added-files": "2",
            },
        )
        history = History()
        t.append(_rows(list(range(10)), "s0"))
        history.record(t)
        next_id = 10
        for step, op in enumerate(ops, start=1):
            next_id = _apply(t, op, step, next_id)
            history.record(t)

        chain = list(reversed(t.metadata.ancestors_of(t.metadata.current_snapshot_id)))
        starts: list[int | None] = [chain[0].parent_snapshot_id, *(s.snapshot_id for s in chain)]
        if chain[0].parent_snapshot_id is not None:
            # The start of the table's history was expired: reading from the start is refused.
            with pytest.raises(NotFound, match="expired"):
                t.scan(to_snapshot_id=chain[-1].snapshot_id).plan_files()
        _check_range(t, history, starts[0], chain[-1].snapshot_id)
        for _ in range(2):
            i = data.draw(st.integers(0, len(chain) - 1), label="start")
            j = data.draw(st.integers(i, len(chain) - 1), label="end")
            _check_range(t, history, starts[i], chain[j].snapshot_id)
        catalog.close()
