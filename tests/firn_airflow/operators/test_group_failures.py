"""Issue 23: a maintenance task with a failed file group fails, after committing the others;
Airflow's retry of it commits only the rest. The operator runs for real in this worker on a
real SQLite catalog; the fault is a data file made unreadable for the first attempt only."""

from __future__ import annotations

from pathlib import Path

import pytest

from firn.maintenance.run_record import GroupsFailed
from firn.spec import summary as S
from firn_airflow.operators import FirnRewriteDataFilesOperator
from tests.firn_airflow.operators.helpers import set_firn_connection
from tests.fixtures.rewrites import fill, ids, make_table
from tests.fixtures.spark_tables import spark_catalog

pytestmark = pytest.mark.airflow

OPTIONS = {"min_input_files": 2, "partial_progress_enabled": True}


def _compactions(t: object) -> list[int]:
    """The groups committed by each compaction commit, oldest first."""
    out = []
    for snap in t.snapshots():  # type: ignore[attr-defined]
        if snap.summary.get(S.MAINTENANCE_OPERATION) == "rewrite_data_files":
            out.append(len((snap.summary.get(S.MAINTENANCE_RUN_GROUPS) or "").split(",")))
    return out


def test_a_failed_group_fails_the_task_and_the_retry_commits_only_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = spark_catalog(tmp_path)
    t = make_table(catalog, "2")
    fill(t, "2", appends=3, rows=20)  # four partitions, three files each
    before = ids(t)
    set_firn_connection(monkeypatch, "firn_groups", tmp_path)
    broken = Path(t.maintenance.rewrite_data_files(min_input_files=2).plan().groups[0].files[0].path)
    data = broken.read_bytes()
    broken.write_bytes(b"not parquet")  # the injected fault: this group's rewrite fails

    def attempt() -> object:
        op = FirnRewriteDataFilesOperator(
            task_id="compact",
            table="db.events",
            firn_conn_id="firn_groups",
            execution="worker",
            options=OPTIONS,
        )
        return op.execute(context={})  # type: ignore[arg-type]

    with pytest.raises(GroupsFailed, match=r"1 group\(s\) failed") as e:
        attempt()
    assert e.value.result.groups_committed == 3
    log = capsys.readouterr().out  # the task log (Airflow's structured logging writes it here)
    assert "groups: 3 committed, 0 skipped as done, 0 conflicted, 1 failed" in log
    assert "group 0 (region=eu) failed: InvalidMetadata" in log
    assert _compactions(t.refresh()) == [1, 1, 1]  # partial progress: a commit per group
    broken.write_bytes(data)  # the fault is gone by the retry

    retry = attempt()
    assert isinstance(retry, dict)
    assert retry["groups_committed"] == 1 and retry["failed_groups"] == []
    assert retry["rewritten_data_files_count"] == 3  # only the failed group's three files
    assert _compactions(t.refresh()) == [1, 1, 1, 1]  # no group rewritten twice
    assert ids(t) == before
    assert len(t.scan().plan_files()) == 4  # one file per partition
