"""The spark-submit job: arguments, tables and namespaces, dry runs, typed JSON results, exit
codes, and a clear error for an operation this build lacks. (The job under spark-submit on a
real cluster is in test_cluster.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from firn.errors import Unsupported
from firn.spark import job
from tests.fixtures.spark_tables import build_table, catalog_uri, spark_catalog
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


def test_a_missing_operation_is_a_clear_error() -> None:
    class _Maintenance:
        def flush_root(self) -> None: ...

    class _Table:
        format_version = 2
        maintenance = _Maintenance()

    with pytest.raises(
        Unsupported, match=r"'compact' needs table.maintenance.rewrite_data_files, which this Firn"
    ):
        job.method_for("compact", _Table())  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="rewrite_position_delete_files"):
        job.method_for("rewrite-dvs", _Table())  # type: ignore[arg-type]
    assert job.method_for("flush", _Table()) == "flush_root"  # type: ignore[arg-type]


def _script(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, job.path(), *argv], capture_output=True, text=True, check=False, timeout=120
    )


def test_dry_run_as_a_script_plans_without_spark(tmp_path: Path) -> None:
    table = build_table(spark_catalog(tmp_path), "v4")
    snapshots = len(table.snapshots())
    done = _script(*_args(tmp_path, "flush", "db.events", options='{"force": true}', dry_run=True))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("firn flush: 1 table(s), 1 planned, 0 failed")
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
