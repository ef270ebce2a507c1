"""Issue 23 item 5: small files over time under a streaming writer, with and without compaction.

    .venv/bin/python bench/bench_streaming_compaction.py [--seconds 40] [--version 3] [--quick]

One writer thread commits every 200 ms through its own catalog connection (appends of 20 rows
with 1 KB payloads in 2 partitions; in 20% of its commits a merge-on-read delete of 5 random
rows it wrote). Two runs on fresh tables, in an order that alternates with ``--rounds``:

* **without**: only the writer;
* **with**: beside it, a maintenance thread loops ``rewrite_data_files`` (partial progress),
  ``rewrite_deletion_vectors`` (v3+; ``rewrite_position_delete_files`` on v2) and
  ``expire_snapshots`` (older than 2 s, keep 5).

Printed every 2 s: the live data files and delete files of each run. Targets: with compaction
the file count stays bounded (the last third's maximum is at most a quarter of the run
without it at the same time, and does not grow from the second third to the last), every
writer commit lands (0 refused) and no compaction group is dropped. The peer here is the
same writer without maintenance; Iceberg Java refuses such writes (issue 23's table).
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from _harness import final_verdict, firn_catalog, round_order, verdict, workdir

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("payload", pa.string()),
    ]
)
INTERVAL_S = 0.2
SAMPLE_S = 2.0


@dataclass
class Run:
    name: str
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, data files, delete files)
    commits: int = 0
    refused: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    maintenance_errors: list[str] = field(default_factory=list)
    carried_rows: int = 0
    compactions: int = 0


def _writer(catalog: Any, seconds: float, run: Run, rng: random.Random) -> None:
    table = catalog.load_table("db.stream")
    live: list[int] = []
    next_id = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            if live and rng.random() < 0.2:
                victims = rng.sample(live, min(5, len(live)))
                table.delete(f"id in ({', '.join(map(str, victims))})")
                gone = set(victims)
                live = [i for i in live if i not in gone]
            else:
                ids = list(range(next_id, next_id + 20))
                next_id += 20
                payload = ["x" * 1000] * len(ids)
                table.append(
                    pa.table({"id": ids, "bucket": [i % 2 for i in ids], "payload": payload}, schema=SCHEMA)
                )
                live += ids
            run.commits += 1
        except Exception as e:
            run.refused.append(f"{type(e).__name__}: {e}")
        time.sleep(max(0.0, INTERVAL_S - (time.monotonic() - started)))


def _maintain(table: Any, version: int, run: Run, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            table.refresh()
            result = table.maintenance.rewrite_data_files(
                min_input_files=2, partial_progress_enabled=True
            ).run()
            run.compactions += 1
            run.carried_rows += result.carried_delete_rows
            run.dropped += [g.reason for g in result.failed_groups]
            table.refresh()
            if version >= 3:
                dv = table.maintenance.rewrite_deletion_vectors(rewrite_all=True).run()
            else:
                dv = table.maintenance.rewrite_position_delete_files(min_input_files=2).run()
            run.dropped += [s.reason for s in dv.skipped if s.item.startswith("group")]
            table.refresh()
            table.maintenance.expire_snapshots(older_than=int(time.time() * 1000) - 2000, retain_last=5).run()
        except Exception as e:
            run.maintenance_errors.append(f"{type(e).__name__}: {e}")
            time.sleep(0.2)


def _count(table: Any) -> tuple[int, int]:
    table.refresh()
    tasks = table.scan().plan_files()
    deletes = {(d.file_path, d.content_offset) for t in tasks for d in t.delete_files}
    return len(tasks), len(deletes)


def scenario(root: Path, name: str, version: int, seconds: float, compact: bool, seed: int) -> Run:
    import firn

    catalog = firn_catalog(root, name)
    catalog.create_table(
        "db.stream",
        schema=SCHEMA,
        partition_spec=[("bucket", "identity")],
        properties={
            "format-version": str(version),
            "write.delete.mode": "merge-on-read",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "100",
        },
    )
    writer_catalog = firn.load_catalog(
        f"sqlite:///{root}/{name}.db", warehouse=str(root / f"{name}-warehouse")
    )
    observer = catalog.load_table("db.stream")
    run = Run("with compaction" if compact else "without")
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(writer_catalog, seconds, run, random.Random(seed)))
    maint = threading.Thread(target=_maintain, args=(catalog.load_table("db.stream"), version, run, stop))
    started = time.monotonic()
    writer.start()
    if compact:
        maint.start()
    while writer.is_alive():
        writer.join(SAMPLE_S)
        run.samples.append((time.monotonic() - started, *_count(observer)))
    stop.set()
    if compact:
        maint.join()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--version", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="8 s runs (smoke test)")
    args = parser.parse_args()
    seconds = 8.0 if args.quick else args.seconds
    runs: dict[bool, list[Run]] = {False: [], True: []}
    with workdir("streaming") as root:
        for r in range(args.rounds):
            for compact in round_order([False, True], r):
                name = f"r{r}-{'with' if compact else 'without'}"
                runs[compact].append(scenario(root, name, args.version, seconds, compact, seed=r))
    without, with_ = runs[False][-1], runs[True][-1]
    print(f"format v{args.version}, {seconds:.0f} s per run, writer every {INTERVAL_S * 1000:.0f} ms")
    print(f"{'t (s)':>6} | {'without: data':>13} {'deletes':>7} | {'with: data':>10} {'deletes':>7}")
    for a, b in zip(without.samples, with_.samples, strict=False):
        print(f"{b[0]:6.1f} | {a[1]:13d} {a[2]:7d} | {b[1]:10d} {b[2]:7d}")
    for run in (without, with_):
        print(
            f"{run.name}: {run.commits} writer commits, {len(run.refused)} refused"
            + (
                f"; {run.compactions} compaction runs, {run.carried_rows} concurrently deleted rows carried "
                f"over, {len(run.dropped)} groups dropped, {len(run.maintenance_errors)} maintenance errors"
                if run is with_
                else ""
            )
        )
    for msg in (*without.refused, *with_.refused, *with_.dropped, *with_.maintenance_errors)[:5]:
        print(f"  {msg}")

    n = min(len(without.samples), len(with_.samples))
    third = max(1, n // 3)
    last_with = max(s[1] + s[2] for s in with_.samples[n - third : n])
    middle_with = max(s[1] + s[2] for s in with_.samples[n - 2 * third : n - third] or with_.samples[:1])
    last_without = without.samples[n - 1][1] + without.samples[n - 1][2]
    ratio = last_with / max(1, last_without)
    print(
        f"files (data + delete) in the last third: with compaction at most {last_with}, without "
        f"{last_without} at the end ({ratio:.2f}x): <= 0.25x: {verdict(ratio <= 0.25)}"
    )
    print(
        f"bounded: last third's max {last_with} <= second third's max {middle_with} + 4: "
        f"{verdict(last_with <= middle_with + 4)}"
    )
    refused = len(without.refused) + len(with_.refused)
    print(f"writer commits refused: {refused}: == 0: {verdict(refused == 0)}")
    print(f"compaction groups dropped: {len(with_.dropped)}: == 0: {verdict(not with_.dropped)}")
    final_verdict()


if __name__ == "__main__":
    main()
