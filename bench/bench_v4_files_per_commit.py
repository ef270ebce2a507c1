"""Issue 4 item 9b: files and bytes written by one small append, Firn V4 vs Firn v2 vs PyIceberg v2.

    .venv/bin/python bench/bench_v4_files_per_commit.py [--warmup 5] [--commits 5] [--quick]

Each table gets ``--warmup`` single-row appends first (so the measured commits have a parent
and history), then ``--commits`` more; for each measured commit the table's ``metadata/`` and
``data/`` directories are listed before and after, and the new files are classified by name.
The V4 table stays below every root flush threshold (``commit.root.*``), so seed 004's
single-file commit applies: exactly two metadata files — the root manifest and the metadata
JSON — which this script checks (exit status 1 otherwise). ``--columns`` widens the table:
the root manifest is Parquet with per-column stats, so its footer (schema and column-chunk
metadata) grows with the column count even when the root holds a handful of entries.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from _harness import (
    files_under,
    final_verdict,
    firn_catalog,
    local_path,
    new_files,
    pyiceberg_catalog,
    quiet_peers,
    verdict,
    workdir,
)

EXPECTED_V4_METADATA_FILES = 2


def kind_of(name: str) -> str:
    """What a metadata file is, by the naming conventions of Firn and PyIceberg."""
    base = Path(name).name
    if base.endswith(".metadata.json"):
        return "metadata JSON"
    if base.startswith("root-") and base.endswith(".parquet"):
        return "root manifest"
    if base.startswith("snap-") and base.endswith(".avro"):
        return "manifest list"
    if base.endswith(".avro"):
        return "manifest (Avro)"
    if base.endswith(".parquet"):
        return "leaf manifest (Parquet)"
    if base.endswith(".puffin"):
        return "Puffin"
    return "other"


def measure(label: str, location: Path, append: Any, commits: int) -> dict[str, Any]:
    meta_dir, data_dir = location / "metadata", location / "data"
    per_commit: list[tuple[Counter[str], int, int, int, dict[str, int]]] = []
    for _ in range(commits):
        before_m, before_d = files_under(meta_dir), files_under(data_dir)
        append()
        added_m = new_files(before_m, files_under(meta_dir))
        added_d = new_files(before_d, files_under(data_dir))
        kinds = Counter(kind_of(p) for p in added_m)
        per_commit.append((kinds, sum(added_m.values()), len(added_d), sum(added_d.values()), added_m))
    return {"label": label, "commits": per_commit}


def report(result: dict[str, Any]) -> tuple[int, int]:
    rows = result["commits"]
    print(f"\n{result['label']}")
    last_bytes, added = rows[-1][1], rows[-1][4]
    counts = [sum(r[0].values()) for r in rows]
    print(f"  metadata files per commit: {counts} (bytes: {[r[1] for r in rows]})")
    print(f"  data files per commit: {[r[2] for r in rows]} (bytes: {[r[3] for r in rows]})")
    print("  last measured commit wrote:")
    for name, size in sorted(added.items(), key=lambda kv: kind_of(kv[0])):
        print(f"    {kind_of(name):<24} {size:>8,} B  {Path(name).name}")
    return counts[-1], last_bytes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=int, default=5, help="appends before measuring")
    ap.add_argument("--commits", type=int, default=5, help="measured appends")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 warm-up, 2 measured")
    ap.add_argument("--keep", action="store_true", help="keep the temporary warehouses")
    ap.add_argument(
        "--columns",
        type=int,
        default=2,
        help="table columns (id, name, then longs c2..): the V4 root's size grows with it",
    )
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.commits = 1, 2
    quiet_peers()

    extra = [pa.field(f"c{i}", pa.int64()) for i in range(2, max(2, args.columns))]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), *extra])
    rows = pa.table(
        {"id": pa.array([1], pa.int64()), "name": ["a"], **{f.name: [1] for f in extra}}, schema=schema
    )

    with workdir("files-per-commit", keep=args.keep) as root:
        fcat = firn_catalog(root)
        v4 = fcat.create_table("db.v4", schema=schema, properties={"format-version": "4"})
        v2 = fcat.create_table("db.v2", schema=schema, properties={"format-version": "2"})
        py = pyiceberg_catalog(root).create_table("db.v2", schema=schema)
        tables: list[tuple[str, Path, Any]] = [
            ("Firn V4 (format-version 4)", local_path(v4.location), lambda: v4.append(rows)),
            ("Firn v2 (format-version 2)", local_path(v2.location), lambda: v2.append(rows)),
            ("PyIceberg 0.12 v2", local_path(py.location()), lambda: py.append(rows)),
        ]
        for _ in range(args.warmup):
            for _label, _loc, append in tables:
                append()
        results = [measure(label, loc, append, args.commits) for label, loc, append in tables]

        print(
            f"One single-row append to {args.columns}-column tables after {args.warmup} warm-up appends; metadata files = everything "
            "new under metadata/ (data files reported separately)"
        )
        summary = [(r["label"], *report(r)) for r in results]
        counts = v4.current_snapshot().summary
        print(
            f"\n(Firn V4 root after the last commit: {counts.get('root-entries')} entries, "
            f"{counts.get('root-manifest-size')} B; thresholds not reached, so no flush)"
        )

    print(f"\n{'table':<28} {'metadata files':>14} {'metadata bytes':>15}")
    for label, n, size in summary:
        print(f"{label:<28} {n:>14} {size:>15,}")
    v4_counts = [sum(c[0].values()) for c in results[0]["commits"]]
    v4_kinds = results[0]["commits"][-1][0]
    ok = all(c == EXPECTED_V4_METADATA_FILES for c in v4_counts) and set(v4_kinds) == {
        "root manifest",
        "metadata JSON",
    }
    print(
        f"\nFirn V4 writes exactly {EXPECTED_V4_METADATA_FILES} metadata files per small append "
        f"(root manifest + metadata JSON): {verdict(ok)} (per commit: {v4_counts})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
