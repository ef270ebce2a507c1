"""Issue 4 item 9e: sizes of the manifest DVs Firn's V4 writer stores vs seed 004's "Roaring Bitmap" table.

    .venv/bin/python bench/bench_v4_manifest_dv_sizes.py [--seeds 3] [--scales 1000,...] [--quick]

A manifest DV removes leaf *ordinals*. Every cell is measured on Firn's own writer, at every
scale: a V4 table whose one leaf holds ``entries`` data files (built once per scale; the
1,000,000-entry table is cached in ``bench/.cache/``), then, per seed, one ``OverwriteFiles``
commit removing the files at ``round(entries x density)`` ordinals drawn uniformly without
replacement, and a rollback to the base snapshot before the next draw. The manifest DV the
commit wrote is read back from the new root, whichever way the writer stored it:

* inline (``inline_content``, up to ``write.manifest-dv.inline-max-bytes``, 16 KiB by
  default): its bytes are the 32-bit portable roaring bitmap the seed measured;
* Puffin (larger): a ``deletion-vector-v1`` blob, i.e. the 64-bit portable vector framed by
  length, magic and CRC; the 32-bit bitmap inside it is the blob less 24 B (length 4, magic
  4, bitmap count 8, key 4, CRC 4), and the blob must hold exactly one key.

Both branches are judged: Firn's own reader (``live_mdvs``: inline bytes, or the Puffin blob
with its length, magic and CRC checked) must give back exactly the removed ordinals, and the
stored size (median over seeds) must be within 5% of the seed's number. ``ref`` is the size
this script computes itself (pyroaring ``BitMap(ordinals)``, run-optimized) for the first
draw, printed for context only. ``--quick`` lowers the inline limit to 1 KiB so that both
branches run in a smoke run of two small scales. Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from _harness import CACHE_DIR, final_verdict, firn_catalog, verdict, workdir
from bench_dv_sizes import DENSITIES, SCALES, SEED_004_ROARING, TOLERANCE

INLINE_MAX_DEFAULT = 16 * 1024
QUICK_INLINE_MAX = 1024
# deletion-vector-v1 blob around one 32-bit bitmap: length 4, magic 4, bitmap count 8, key 4, CRC 4.
BLOB_FRAMING = 24
CACHED_SCALES = (1_000_000,)


def ordinals(entries: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(entries, size=round(entries * density), replace=False)).astype(np.uint32)


def reference_bytes(ords: np.ndarray) -> int:
    """What this script computes on its own (context only): pyroaring, run-optimized."""
    bitmap = BitMap(ords.tolist())
    bitmap.run_optimize()
    return len(bitmap.serialize())


def _files(location: str, entries: int) -> list[Any]:
    """``entries`` synthetic data files (no column stats: the leaf's size is not measured)."""
    from firn.spec.content import DataFile, FileContent, FileFormat

    return [
        DataFile(FileContent.DATA, f"{location}/data/{i:08d}.parquet", FileFormat.PARQUET, (), 100, 4096, 0)
        for i in range(entries)
    ]


def one_leaf_table(root: Path, entries: int, inline_max: int) -> tuple[Any, list[Any], int]:
    """A V4 table whose one leaf holds ``entries`` files: (table, files in leaf order, base
    snapshot id). Built in ``root`` (a fresh or a cached directory)."""
    from firn.core.actions.append import AppendFiles
    from firn.core.transaction import Transaction
    from firn.core.v4.reader import root_table
    from firn.manifests.v4_io import read_v4_manifest

    catalog = firn_catalog(root)
    name = f"db.leaf_{entries}"
    props = {"write.manifest-dv.inline-max-bytes": str(inline_max)}
    if catalog.table_exists(name):
        table = catalog.load_table(name)
        with table.transaction() as tx:
            tx.set_properties(props)
    else:
        table = catalog.create_table(
            name,
            schema=_schema(),
            # Every file of the one append goes to a new leaf, never to the root.
            properties={"format-version": "4", "commit.root.max-added-files": "0", **props},
        )
        Transaction(table).add_action(AppendFiles(_files(table.location, entries))).commit()
    base = table.current_snapshot()
    assert base is not None
    r = root_table(table.io, table.metadata, base)
    leaves = [p for p in r.column("location").to_pylist() if p]
    assert len(leaves) == 1, f"expected one leaf, found {len(leaves)}"
    # Ordinal i is the leaf's i-th entry: map ordinals to files by the order the leaf holds.
    by_path = {f.file_path: f for f in _files(table.location, entries)}
    in_leaf = read_v4_manifest(table.io, leaves[0], columns=["location"]).column("location").to_pylist()
    assert len(in_leaf) == entries and set(in_leaf) == by_path.keys()
    return table, [by_path[p] for p in in_leaf], base.snapshot_id


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64(), nullable=False)])


def stored_dv(table: Any, files: list[Any], base: int, ords: np.ndarray) -> tuple[int, str, bool]:
    """Commit the removal of the files at ``ords``; (bytes of the 32-bit bitmap Firn stored,
    "inline" or "Puffin", whether Firn's reader gives back exactly ``ords``). Rolls back after."""
    from firn.core.actions.overwrite import OverwriteFiles
    from firn.core.transaction import Transaction
    from firn.core.v4.reader import live_mdvs, root_table
    from firn.spec.content import FileContent

    removed = [files[int(i)] for i in ords]
    Transaction(table).add_action(OverwriteFiles(starting_snapshot_id=base, removed_data=removed)).commit()
    try:
        r = root_table(table.io, table.metadata, table.current_snapshot())
        is_mdv = np.asarray(r.column("content_type").to_numpy()) == int(FileContent.MANIFEST_DV)
        mdv = r.filter(is_mdv)
        assert mdv.num_rows == 1, f"expected one manifest DV, found {mdv.num_rows}"
        dv = mdv.column("deletion_vector")[0].as_py()
        if dv["inline_content"] is not None:
            size, storage = len(dv["inline_content"]), "inline"
        else:
            blob = Path(mdv.column("location")[0].as_py()).read_bytes()
            start, length = int(dv["offset"]), int(dv["size_in_bytes"])
            (keys,) = struct.unpack_from("<Q", blob, start + 8)  # after length (4) and magic (4)
            assert keys == 1, f"expected a one-key 64-bit vector, found {keys} keys"
            size, storage = length - BLOB_FRAMING, "Puffin"
        ((_, bitmap),) = live_mdvs(table.io, r).values()
        exact = np.array_equal(np.asarray(bitmap.to_array(), dtype=np.uint32), ords)
    finally:
        with table.manage_snapshots() as snapshots:
            snapshots.rollback_to(base)
    return size, storage, exact


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="random draws (commits) per cell; median reported")
    ap.add_argument("--scales", default=",".join(str(s) for s in SCALES), help="leaf sizes to measure")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: 1 seed, scales 1,000 and 10,000, inline limit {QUICK_INLINE_MAX:,} B (both branches)",
    )
    args = ap.parse_args()
    scales = [int(s) for s in args.scales.split(",") if s]
    inline_max = INLINE_MAX_DEFAULT
    if args.quick:
        args.seeds, scales, inline_max = 1, [1_000, 10_000], QUICK_INLINE_MAX
    unknown = [s for s in scales if s not in SCALES]
    if unknown:
        ap.error(f"scales must be among seed 004's {SCALES}, not {unknown}")

    print("Manifest DVs stored by Firn's V4 writer (real commits) vs seed 004 'Roaring Bitmap'")
    print(
        f"median of {args.seeds} commits per cell; within = |diff| <= {TOLERANCE:.0%}; inline up to "
        f"{inline_max:,} B, else Puffin (compared: the 32-bit bitmap inside the blob)\n"
    )
    header = (
        f"{'density':>7} {'entries':>9} {'removed':>8} | {'seed004':>8} {'firn':>8} {'diff':>7} {'within':>6}"
        f" | {'storage':>7} {'read back':>9} | {'ref':>8}"
    )
    cells = failures = wrong = 0
    storages: set[str] = set()
    with workdir("mdv") as tmp:
        for entries in scales:
            root = tmp / f"leaf-{entries}"
            if entries in CACHED_SCALES:
                root = CACHE_DIR / f"mdv-one-leaf-{entries}"
                if not (root / "done").exists():
                    shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            table, files, base = one_leaf_table(root, entries, inline_max)
            (root / "done").write_text("ok")
            print(f"{entries:,}-entry leaf ready in {time.perf_counter() - started:.1f} s")
            if entries == scales[0]:
                print(header)
                print("-" * len(header))
            for density in DENSITIES:
                draws = [ordinals(entries, density, s) for s in range(args.seeds)]
                results = [stored_dv(table, files, base, ords) for ords in draws]
                size = int(statistics.median(r[0] for r in results))
                kinds = {r[1] for r in results}
                exact = all(r[2] for r in results)
                seed_bytes = SEED_004_ROARING[density][SCALES.index(entries)]
                diff = (size - seed_bytes) / seed_bytes
                within = abs(diff) <= TOLERANCE
                cells += 1
                failures += not within
                wrong += not exact
                storages |= kinds
                print(
                    f"{density:>7} {entries:>9,} {len(draws[0]):>8,} | {seed_bytes:>8,} {size:>8,} {diff:>+7.1%} "
                    f"{'yes' if within else 'NO':>6} | {'/'.join(sorted(kinds)):>7} "
                    f"{'exact' if exact else 'WRONG':>9} | {reference_bytes(draws[0]):>8,}"
                )
            table.catalog.close()
    print(
        f"\n{cells - failures}/{cells} cells within {TOLERANCE:.0%} of seed 004's roaring numbers "
        f"(target: all): {verdict(failures == 0)}"
    )
    print(
        f"every stored manifest DV ({', '.join(sorted(storages))}) read back by Firn's reader to exactly "
        f"the removed ordinals (target: all): {verdict(wrong == 0)}"
    )
    if args.quick and storages != {"inline", "Puffin"}:
        print(f"the quick run must exercise both branches, saw only {sorted(storages)}")
        return 1
    return 0 if failures == 0 and wrong == 0 else 1


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
