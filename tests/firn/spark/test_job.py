"""The spark-submit job: arguments, tables and namespaces, dry runs, typed JSON results, exit
codes, and a clear error for an operation this build lacks. (The job under spark-submit on a
real cluster is in test_cluster.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from firn.spark import job
from firn.table.table import Table
from tests.fixtures.maintenance import backdate_orphan_record
from tests.fixtures.spark_tables import build_table, catalog_uri, same_rows, spark_catalog
from tests.fixtures.tables import events


def _args(
    tmp_path: Path, operation: str, *tables: str, options: str = "{}", dry_run: bool = False
) -> list[str]:
    out = [
        operation,
        "--catalog",
        catalog_uri(tmp_path),
        "--options",
        options,
        "--result",
        str(tmp_path / "out.json"),
    ]
    for t in tables:
        out += ["--table", t]
    return [*out, "--dry-run"] if dry_run else out


def test_path_points_at_this_module() -> None:
    assert job.path().endswith("firn/spark/job.py") and Path(job.path()).is_file()


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["nope", "--table", "t", "--result", "r"], "invalid choice: 'nope'"),
        (["flush", "--result", "r"], "--table"),
        (["flush", "--table", "t", "--result", "r", "--options", "[1"], "--options must be a JSON object"),
        (["flush", "--table", "t", "--result", "r", "--options", "[1]"], "--options must be a JSON object"),
        (["flush", "--table", "t", "--result", "r", "--catalog-property", "novalue"], "KEY=VALUE"),
    ]:
        capsys.readouterr()
        assert job.main(argv) == 2
        assert message in capsys.readouterr().err


def test_parse_args_collects_properties_and_options(tmp_path: Path) -> None:
    args = job.parse_args(
        [
            "expire",
            "--table",
            "db.a",
            "--table",
            "db",
            "--catalog-property",
            "s3.endpoint=http://x:9000",
            "--catalog-property",
            "name=prod",
            "--options",
            '{"retain-last": 3}',
            "--result",
            "r.json",
        ]
    )
    assert args.table == ["db.a", "db"] and args.options == {"retain-last": 3}
    assert args.catalog_property == {"s3.endpoint": "http://x:9000", "name": "prod"}


def test_results_go_to_paths_and_fileio_uris(tmp_path: Path) -> None:
    job.write_result(str(tmp_path / "a" / "r.json"), "[1]", {})
    job.write_result((tmp_path / "b.json").as_uri(), "[2]", {})
    assert (tmp_path / "a" / "r.json").read_text() == "[1]" and (tmp_path / "b.json").read_text() == "[2]"


def test_an_unknown_operation_is_a_clear_error() -> None:
    with pytest.raises(job._ArgumentError, match="invalid choice: 'compacts'"):
        job.parse_args(["compacts", "--table", "db.t", "--result", "r.json"])


def _script(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, job.path(), *argv], capture_output=True, text=True, check=False, timeout=120
    )


def test_dry_run_as_a_script_plans_without_spark(tmp_path: Path) -> None:
    table = build_table(spark_catalog(tmp_path), "v4")
    snapshots = len(table.snapshots())
    done = _script(*_args(tmp_path, "flush", "db.events", options='{"force": true}', dry_run=True))
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.strip().splitlines()  # one summary line
    assert line.startswith("firn flush: 1 table(s), 1 planned, 0 failed")
    [entry] = json.loads((tmp_path / "out.json").read_text())
    assert entry["operation"] == "flush_root" and entry["dry_run"] is True
    assert entry["move_data_files"] is True and "would move" in entry["description"]
    assert len(table.refresh().snapshots()) == snapshots


def test_failures_exit_1_with_class_and_message_on_stderr(tmp_path: Path) -> None:
    spark_catalog(tmp_path)
    done = _script(*_args(tmp_path, "flush", "db.nope", dry_run=True))
    assert done.returncode == 1
    assert "NotFound: --table 'db.nope' is neither a table nor a namespace" in done.stderr
    table = build_table(spark_catalog(tmp_path), "v2-deletes")
    done = _script(*_args(tmp_path, "flush", table.name, dry_run=True))
    assert done.returncode == 1
    assert "Unsupported: db.events: db.events is format version 2; root flush needs a V4 table" in done.stderr
    [entry] = json.loads((tmp_path / "out.json").read_text())
    assert entry == {
        "operation": "flush",
        "table": "db.events",
        "error": {"type": "Unsupported", "message": entry["error"]["message"]},
    }


def test_a_catalog_password_is_never_printed(tmp_path: Path) -> None:
    # The catalog is unreachable (port 1): the job fails naming the URI, with its password masked.
    argv = _args(tmp_path, "flush", "db.t", dry_run=True)
    argv[argv.index("--catalog") + 1] = "postgresql://firn:JOBSECRET-11@127.0.0.1:1/firn"
    done = _script(*argv)
    assert done.returncode == 1
    assert "JOBSECRET-11" not in done.stderr + done.stdout and "firn:***@127.0.0.1:1" in done.stderr


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_run_over_a_namespace_commits_each_table(spark: Any, tmp_path: Path) -> None:
    catalog = spark_catalog(tmp_path)
    for name in ("a", "b"):
        t = build_table(catalog, "v4", name=name)
        t.append(events(3, start=500))
    build_table(catalog, "v3-dvs", name="c")
    args = job.parse_args(_args(tmp_path, "flush", "db", "db.a", options='{"force": "true"}'))
    entries, failed = job.run(args, spark)
    assert [e["table"] for e in entries] == ["db.a", "db.b", "db.c"]
    assert failed == 1 and entries[2]["error"]["type"] == "Unsupported"
    for e in entries[:2]:
        assert e["operation"] == "flush_root" and e["data_files_moved"] > 0
        assert catalog.load_table(e["table"]).current_snapshot().snapshot_id == e["snapshot_id"]  # type: ignore[union-attr]
    assert json.loads((tmp_path / "out.json").read_text()) == json.loads(json.dumps(entries))
    assert job.summary(args, entries, failed, 1.5).startswith(
        "firn flush: 3 table(s), 2 done, 1 failed in 1500 ms"
    )


def _later() -> int:
    return int(time.time() * 1000) + 2000


def _plant_orphans(table: Table) -> None:
    for i in range(2):
        Path(table.location.removeprefix("file://"), "data", f"stray-{i}.parquet").write_bytes(b"x")
    # Phase one ran two days ago: the strays are recorded, so the job's run deletes them.
    table.maintenance.remove_orphan_files(older_than=_later(), force=True, delete=True).run()
    backdate_orphan_record(table, 2 * 24 * 3600 * 1000)


def _second_position_deletes(table: Table) -> None:
    table.delete("id = 44 or id = 45 or id = 46 or id = 47")


# (operation, table kind, preparation, --options in Iceberg's hyphenated names, method run)
EVERY_OPERATION: list[tuple[str, str, Callable[[Table], None] | None, dict[str, Any], str]] = [
    (
        "compact",
        "v2-deletes",
        None,
        {"min-input-files": 2, "target-file-size-bytes": 1 << 20},
        "rewrite_data_files",
    ),
    ("rewrite-dvs", "v3-dvs", None, {"min-input-files": 2}, "rewrite_deletion_vectors"),
    (
        "rewrite-dvs",
        "v2-deletes",
        _second_position_deletes,
        {"min-input-files": 2},
        "rewrite_position_delete_files",
    ),
    ("rewrite-manifests", "v2-deletes", None, {"use-caching": False}, "rewrite_manifests"),
    ("expire", "v3-dvs", None, {"retain-last": 1, "older-than": "later"}, "expire_snapshots"),
    (
        "orphans",
        "v1",
        _plant_orphans,
        {"older-than": "later", "dry-run": False, "force": True},
        "remove_orphan_files",
    ),
    ("flush", "v4", None, {"force": True}, "flush_root"),
]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
@pytest.mark.parametrize(
    ("operation", "kind", "prepare", "options", "method"),
    EVERY_OPERATION,
    ids=[f"{c[0]}-{c[1]}" for c in EVERY_OPERATION],
)
def test_every_operation_runs_with_hyphenated_options(
    spark: Any,
    tmp_path: Path,
    operation: str,
    kind: str,
    prepare: Callable[[Table], None] | None,
    options: dict[str, Any],
    method: str,
) -> None:
    table = build_table(spark_catalog(tmp_path), kind)
    if prepare is not None:
        prepare(table)
    before = table.refresh().scan().to_arrow()
    snapshots = len(table.snapshots())
    options = {k: _later() if v == "later" else v for k, v in options.items()}
    args = job.parse_args(_args(tmp_path, operation, "db.events", options=json.dumps(options)))
    entries, failed = job.run(args, spark)
    assert failed == 0, entries
    [entry] = entries
    assert entry["operation"] == method and entry["table"] == "db.events"
    assert json.loads((tmp_path / "out.json").read_text()) == json.loads(json.dumps(entries))
    table.refresh()
    if entry["snapshot_id"] is not None:  # a commit: the table's new current snapshot
        assert entry["snapshot_id"] == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
        assert len(table.snapshots()) == snapshots + 1
    else:  # expiry and orphan removal delete files
        assert entry["deleted_files"], entry
    if operation == "expire":
        assert len(table.snapshots()) == 1
    if operation == "orphans":
        assert len(entry["orphan_file_locations"]) == 2
    assert same_rows(table.scan().to_arrow(), before)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_the_catalog_comes_from_the_spark_conf(spark: Any, tmp_path: Path) -> None:
    build_table(spark_catalog(tmp_path), "v4")
    argv = [
        "flush",
        "--table",
        "db.events",
        "--options",
        '{"force": true}',
        "--result",
        str(tmp_path / "r.json"),
    ]
    spark.conf.set("spark.firn.catalog.uri", catalog_uri(tmp_path))
    spark.conf.set("spark.firn.catalog.warehouse", str(tmp_path / "warehouse"))
    try:
        entries, failed = job.run(job.parse_args([*argv, "--dry-run"]), spark)
    finally:
        spark.conf.unset("spark.firn.catalog.uri")
        spark.conf.unset("spark.firn.catalog.warehouse")
    assert failed == 0 and entries[0]["dry_run"] is True and entries[0]["table"] == "db.events"
    with pytest.raises(Exception, match="catalog"):  # none left: a clear error naming it
        job.run(job.parse_args(argv), spark)
