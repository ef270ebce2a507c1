"""Issue 4 item 9e: sizes of Firn's manifest DVs vs seed 004's "Roaring Bitmap" table.

    .venv/bin/python bench/bench_v4_manifest_dv_sizes.py [--seeds 5] [--verify-scales 1000,10000] [--quick]

A manifest DV removes leaf *ordinals*; Firn stores it in the root entry's ``inline_content``
as a 32-bit portable roaring bitmap, built the way the commit path builds it
(``BitMap(ordinals)``, ``run_optimize()``, ``serialize()``; ``firn.core.v4.writer``). Above
``manifest-dv.inline-max-bytes`` (default 16 KiB) it goes to Puffin as a
``deletion-vector-v1`` blob instead, so the storage column says which one applies.

Each cell: ``round(entries x density)`` distinct ordinals drawn uniformly without
replacement, median over ``--seeds`` draws, next to seed 004's appendix number, the %
difference and whether it is within 5%.

``--verify-scales``: for those leaf sizes, real commits — a V4 table with one leaf of that
many entries, one ``OverwriteFiles`` removing the files at the first seed's ordinals — and
the bytes actually stored in the new root's manifest DV entry, which must equal the computed
size (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from pyroaring import BitMap

from bench_dv_sizes import DENSITIES, SCALES, SEED_004_ROARING, TOLERANCE

INLINE_MAX_DEFAULT = 16 * 1024


def ordinals(entries: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(entries, size=round(entries * density), replace=False)).astype(np.uint32)


def manifest_dv_bytes(ords: np.ndarray) -> bytes:
    """The serialized manifest DV, as ``RootTreeWriter._manifest_dvs`` builds it."""
    bitmap = BitMap(ords.tolist())
    bitmap.run_optimize()
    return bitmap.serialize()


def stored_in_root(entries: int, ords: np.ndarray) -> int:
    """Commit a removal of ``ords`` from a one-leaf V4 table; bytes of the root's manifest DV."""
    import random

    from _harness import firn_catalog, workdir
    from bench_v4_planning import SCHEMA, make_files
    from firn.core.actions.append import AppendFiles
    from firn.core.actions.overwrite import OverwriteFiles
    from firn.core.transaction import Transaction
    from firn.core.v4.reader import root_table
    from firn.spec.content import FileContent

    with workdir("mdv") as root:
        table = firn_catalog(root).create_table("db.t", schema=SCHEMA, properties={"format-version": "4"})
        files = make_files(table.location, 0, entries, random.Random(1))
        Transaction(table).add_action(AppendFiles(files)).commit()
        removed = [files[int(i)] for i in ords]
        sid = table.current_snapshot().snapshot_id
        Transaction(table).add_action(OverwriteFiles(starting_snapshot_id=sid, removed_data=removed)).commit()
        r = root_table(table.io, table.metadata, table.current_snapshot())
        mdv = r.filter(np.asarray(r.column("content_type").to_numpy()) == int(FileContent.MANIFEST_DV))
        assert mdv.num_rows == 1, f"expected one manifest DV, found {mdv.num_rows}"
        dv = mdv.column("deletion_vector")[0].as_py()
        if dv["inline_content"] is not None:
            return len(dv["inline_content"])
        return -int(dv["size_in_bytes"])  # in Puffin: the blob's size, negated to flag it


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5, help="random draws per cell (median reported)")
    ap.add_argument("--verify-scales", default="1000,10000", help="leaf sizes to check by real commits")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, verify at 1,000 only")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.verify_scales = 2, "1000"
    verify = {int(s) for s in args.verify_scales.split(",") if s}

    print("Manifest DV sizes (32-bit portable roaring, run-optimized) vs seed 004 'Roaring Bitmap'")
    print(
        f"median of {args.seeds} seeds; within = |diff| <= {TOLERANCE:.0%}; inline up to {INLINE_MAX_DEFAULT:,} B\n"
    )
    header = (
        f"{'density':>7} {'entries':>9} {'removed':>8} | {'seed004':>8} {'firn':>8} {'diff':>7} {'within':>6}"
        f" | {'B/removed':>9} {'storage':>8} {'committed':>9}"
    )
    print(header)
    print("-" * len(header))
    failures = mismatches = 0
    for density in DENSITIES:
        for column, entries in enumerate(SCALES):
            sizes = [len(manifest_dv_bytes(ordinals(entries, density, s))) for s in range(args.seeds)]
            size = int(statistics.median(sizes))
            seed_bytes = SEED_004_ROARING[density][column]
            diff = (size - seed_bytes) / seed_bytes
            within = abs(diff) <= TOLERANCE
            failures += not within
            removed = round(entries * density)
            storage = "inline" if size <= INLINE_MAX_DEFAULT else "Puffin"
            committed = ""
            if entries in verify:
                ords = ordinals(entries, density, 0)
                stored = stored_in_root(entries, ords)
                expected = len(manifest_dv_bytes(ords))
                if stored >= 0:
                    ok = stored == expected
                    committed = f"{stored:,}" + ("" if ok else "!=")
                else:
                    ok = True  # Puffin: blob = 64-bit vector + framing, checked by bench_dv_sizes
                    committed = f"blob {-stored:,}"
                mismatches += not ok
            print(
                f"{density:>7} {entries:>9,} {removed:>8,} | {seed_bytes:>8,} {size:>8,} {diff:>+7.1%} "
                f"{'yes' if within else 'NO':>6} | {size / removed:>9.2f} {storage:>8} {committed:>9}"
            )
    cells = len(DENSITIES) * len(SCALES)
    print(f"\n{cells - failures}/{cells} cells within {TOLERANCE:.0%} of seed 004's roaring numbers.")
    if verify:
        print(
            f"committed = bytes of the manifest DV stored in a real root for the first seed's draw "
            f"(scales {sorted(verify)}): {'all equal the computed size' if not mismatches else 'MISMATCH'}"
        )
    return 0 if failures == 0 and mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
