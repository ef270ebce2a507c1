"""Issue 4 item 9d: bytes written to remove one file from a 10,000-entry leaf.

    .venv/bin/python bench/bench_v4_remove_one.py [--entries 10000] [--quick]

Three tables hold the same ``--entries`` synthetic data files (stats on four columns, as in
``bench_v4_planning.py``; the files need not exist), added in one commit:

* Firn V4: the append goes to one leaf manifest; removing one file adds a *manifest DV* (an
  inline roaring bitmap) to a new root manifest — the leaf is not rewritten (seed 004);
* Firn v2: one Avro manifest; removing one file rewrites that manifest (9,999 EXISTING +
  1 DELETED entries) and writes a new manifest list;
* PyIceberg 0.12 v2 (the Firn v2 table registered in a PyIceberg catalog): ``delete`` with a
  filter matching exactly one file's rows, which PyIceberg drops by metrics without reading.

Printed: every metadata file each removal wrote, and the target comparison — the V4 root
manifest's bytes against the rewritten v2 manifest's (target <= 1%). The metadata JSON,
written by every format, is reported separately.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

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
from bench_v4_files_per_commit import kind_of
from bench_v4_planning import ROWS_PER_FILE, SCHEMA, make_files

RATIO_TARGET = 0.01


def removal(label: str, location: Path, remove: Any) -> dict[str, int]:
    before = files_under(location / "metadata")
    remove()
    added = new_files(before, files_under(location / "metadata"))
    print(f"\n{label}")
    for name, size in sorted(added.items(), key=lambda kv: kind_of(kv[0])):
        print(f"  {kind_of(name):<24} {size:>10,} B  {Path(name).name}")
    print(f"  {'total':<24} {sum(added.values()):>10,} B in {len(added)} files")
    return added


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=10_000, help="files in the leaf / manifest")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 entries")
    ap.add_argument("--keep", action="store_true", help="keep the temporary warehouses")
    args = ap.parse_args()
    if args.quick:
        args.entries = 2_000
    quiet_peers()

    from firn.core.actions.append import AppendFiles
    from firn.core.actions.overwrite import OverwriteFiles
    from firn.core.transaction import Transaction
    from firn.core.v4.reader import root_table
    from firn.spec.content import FileContent

    n = args.entries
    with workdir("remove-one", keep=args.keep) as root:
        catalog = firn_catalog(root)
        v4 = catalog.create_table("db.v4", schema=SCHEMA, properties={"format-version": "4"})
        v2 = catalog.create_table("db.v2", schema=SCHEMA, properties={"format-version": "2"})
        v2p = catalog.create_table("db.v2p", schema=SCHEMA, properties={"format-version": "2"})
        files = make_files(v4.location, 0, n, random.Random(4))
        for t in (v4, v2, v2p):
            Transaction(t).add_action(AppendFiles(files)).commit()
        py = pyiceberg_catalog(root).register_table(("db", "v2p"), v2p.metadata_location)

        r = root_table(v4.io, v4.metadata, v4.current_snapshot())
        kinds = r.column("content_type").to_pylist()
        assert kinds == [int(FileContent.DATA_MANIFEST)], f"expected one leaf in the root, got {kinds}"
        leaf_size = r.column("file_size_in_bytes")[0].as_py()
        print(
            f"Removing 1 of {n:,} data files (one leaf / one manifest); the V4 leaf is {leaf_size:,} B "
            "and is not rewritten"
        )

        victim = files[n // 2]

        def remove_firn(table: Any) -> None:
            action = OverwriteFiles(
                starting_snapshot_id=table.current_snapshot().snapshot_id, removed_data=[victim]
            )
            Transaction(table).add_action(action).commit()

        lo = (n // 2) * ROWS_PER_FILE
        v4_files = removal(
            "Firn V4 (manifest DV in the root)", local_path(v4.location), lambda: remove_firn(v4)
        )
        v2_files = removal("Firn v2 (manifest rewrite)", local_path(v2.location), lambda: remove_firn(v2))
        py_files = removal(
            f"PyIceberg 0.12 v2: delete('id >= {lo} and id < {lo + ROWS_PER_FILE}')",
            local_path(v2p.location),
            lambda: py.delete(f"id >= {lo} and id < {lo + ROWS_PER_FILE}"),
        )
        for t, label in ((v4, "V4"), (v2, "v2")):
            left = sum(1 for _ in t.scan().plan_files())
            assert left == n - 1, f"Firn {label} plans {left} files after the removal"
        py_left = len(list(py.refresh().scan().plan_files()))
        assert py_left == n - 1, f"PyIceberg plans {py_left} files after the delete"

    def pick(added: dict[str, int], kind: str) -> int:
        return sum(s for p, s in added.items() if kind_of(p) == kind)

    root_b = pick(v4_files, "root manifest")
    v2_manifest_b = pick(v2_files, "manifest (Avro)")
    py_manifest_b = pick(py_files, "manifest (Avro)")
    ratio = root_b / v2_manifest_b
    print(f"\n{'':<34} {'manifests':>10} {'manifest list':>13} {'metadata JSON':>13} {'total':>10}")
    print(
        f"{'Firn V4 (root manifest + JSON)':<34} {root_b:>10,} {'-':>13} {pick(v4_files, 'metadata JSON'):>13,} "
        f"{sum(v4_files.values()):>10,}"
    )
    for label, added in (("Firn v2", v2_files), ("PyIceberg v2", py_files)):
        print(
            f"{label:<34} {pick(added, 'manifest (Avro)'):>10,} {pick(added, 'manifest list'):>13,} "
            f"{pick(added, 'metadata JSON'):>13,} {sum(added.values()):>10,}"
        )
    print(
        f"\nV4 root manifest / rewritten v2 manifest (Firn) = {root_b:,} / {v2_manifest_b:,} = {ratio:.2%} "
        f"(target <= {RATIO_TARGET:.0%}) {verdict(ratio <= RATIO_TARGET)}"
    )
    print(f"V4 root manifest / PyIceberg's rewritten manifest = {root_b / py_manifest_b:.2%}")
    print(
        f"all metadata: V4 {sum(v4_files.values()):,} B vs Firn v2 {sum(v2_files.values()):,} B "
        f"({sum(v4_files.values()) / sum(v2_files.values()):.1%})"
    )
    return 0


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
