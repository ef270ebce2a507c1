"""A submitted Spark maintenance job's log, as the task log gets it (every line spark-submit
prints goes through ``SparkSubmitHook``'s logger): no Spark INFO lines, no third-party
deprecation warnings, and the job's one result line last, saying what changed and how long."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from firn_airflow.hooks.firn import FirnHook
from firn_airflow.hooks.spark_job import DRIVER_JAVA_OPTIONS, SparkMaintenanceJob, SparkSettings, quiet_conf
from tests.firn_airflow.operators.helpers import (
    COMPACT_OPTIONS,
    catalog_with_table,
    set_firn_connection,
    set_spark_connection,
)

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.xdist_group("spark")]

# Spark's console layout: "26/11/27 02:35:22 INFO SparkContext: ..."
SPARK_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?P<level>[A-Z]+) ")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.extend(record.getMessage().splitlines())


def test_quiet_conf_puts_firn_s_log4j_file_before_the_user_s_options() -> None:
    conf = quiet_conf({DRIVER_JAVA_OPTIONS: "-Dlog4j2.configurationFile=file:/mine.properties -Xss4m"})
    options = conf[DRIVER_JAVA_OPTIONS].split()
    assert options[0].startswith("-Dlog4j2.configurationFile=file:/") and options[0].endswith(
        "firn/spark/log4j2.properties"
    )
    assert Path(options[0].removeprefix("-Dlog4j2.configurationFile=file:")).is_file()
    assert options[1:] == ["-Dlog4j2.configurationFile=file:/mine.properties", "-Xss4m"]  # theirs win
    assert quiet_conf({"spark.executorEnv.PYTHONWARNINGS": "default"})[
        "spark.executorEnv.PYTHONWARNINGS"
    ] == ("default")


@pytest.mark.timeout(600)
def test_a_submitted_job_logs_no_spark_info_and_ends_with_its_result_line(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_quiet", tmp_path)
    set_spark_connection(monkeypatch)
    job = SparkMaintenanceJob(
        SparkSettings(conf={"spark.ui.enabled": "false"}), FirnHook("firn_quiet").get_config()
    )
    captured = _Lines()
    logger = logging.getLogger("tests.spark_submit_hook")
    logger.addHandler(captured)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    build = job.submit_hook

    def submit_hook(*args: Any, **kwargs: Any) -> Any:
        hook = build(*args, **kwargs)
        hook._log = logger  # the hook logs each line spark-submit prints through self.log
        return hook

    monkeypatch.setattr(job, "submit_hook", submit_hook)
    entry = job.run("rewrite_data_files", "db.events", COMPACT_OPTIONS)
    assert entry["rewritten_data_files_count"] > entry["added_data_files_count"] > 0

    lines = [line for line in captured.lines if line.strip()]
    # The capture works: spark-submit's command line (the hook's) and the job's output are in it.
    assert any(line.startswith("Spark-Submit cmd:") for line in lines), lines[:5]
    levels = [m["level"] for line in lines if (m := SPARK_LINE.match(line))]
    assert "INFO" not in levels, [line for line in lines if " INFO " in line][:5]
    output = [line for line in lines if not line.startswith("Spark-Submit cmd:")]  # what the job printed
    noisy = [line for line in output if re.search(r"FutureWarning|DeprecationWarning", line)]
    assert not noisy, noisy
    last = lines[-1]
    assert last.startswith("firn compact: 1 table(s), 1 done, 0 failed in "), lines[-5:]
    # What changed and how long: the result's own figures, its snapshot, its duration.
    assert f"db.events: files rewritten {entry['rewritten_data_files_count']}" in last, last
    assert f"snapshot {entry['snapshot_id']} in " in last and re.search(r" in [\d.]+ (ms|s)", last), last
    assert len(lines) < 15, lines  # spark-submit's command, perhaps a warning or two, the result
