"""The ``firn`` command against real SQLite catalogs: inspection, maintenance by name, the
documented exit codes, and one run of the installed script in a subprocess."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from firn.catalog.sql import SqlCatalog
from firn.cli import EXIT_BAD_INPUT, EXIT_LEASE_HELD, main, maintain
from firn.maintenance import TableMaintenance, registry
from firn.maintenance.operations import NIGHTLY_ORDER
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import backdate_orphan_record, local, soon_ms
from tests.fixtures.rewrites import MOR, events, fill, ids, make_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
# The CLI subcommands and Spark job operations of the briefing, and the methods they run.
BRIEFING_NAMES = {
    "expire": "expire_snapshots",
    "compact": "rewrite_data_files",
    "rewrite-dvs": "rewrite_deletion_vectors",
    "rewrite-manifests": "rewrite_manifests",
    "orphans": "remove_orphan_files",
    "flush": "flush_root",
}


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path, name="default")  # the CLI's default catalog name
    c.create_namespace("db")
    v4 = c.create_table("db.v4", schema=SCHEMA)
    for i in range(3):
        v4.append(pa.table({"id": [i], "name": [f"n{i}"]}, schema=SCHEMA))
    v2 = c.create_table("db.v2", schema=SCHEMA, properties={"format-version": "2"})
    v2.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    yield c
    c.close()


@pytest.fixture
def uri(tmp_path: Path, catalog: SqlCatalog) -> str:
    return f"sqlite:///{tmp_path / 'catalog.db'}"


def firn(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner(env=env or {"FIRN_CATALOG_URI": None}).invoke(main, list(args), catch_exceptions=False)


def test_names_are_the_briefing_s_and_plug_in_by_method_name() -> None:
    assert registry.short_names() == BRIEFING_NAMES
    assert set(registry.short_names().values()) == set(NIGHTLY_ORDER)
    assert set(maintain.list_commands(click.Context(maintain))) == {*BRIEFING_NAMES, "recommend"}
    assert registry.spec_for_table("rewrite-dvs", 2).name == "rewrite_position_delete_files"
    assert (
        registry.spec_for_table("rewrite-dvs", 3).name
        == registry.spec_for_table("rewrite_deletion_vectors", 4).name
        == "rewrite_deletion_vectors"
    )


@pytest.mark.parametrize("short", sorted(BRIEFING_NAMES))
def test_every_subcommand_prints_its_plan_with_dry_run(uri: str, catalog: SqlCatalog, short: str) -> None:
    method = BRIEFING_NAMES[short]
    assert hasattr(TableMaintenance, method)
    before = catalog.load_table("db.v4").metadata_location
    result = firn("maintain", short, "db.v4", "--catalog", uri, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["operation"] == method and plan["table"] == "db.v4"
    human = firn("maintain", short, "db.v4", "--catalog", uri, "--dry-run")
    assert human.exit_code == 0 and human.stdout.startswith(f"{method} on db.v4 (snapshot ")
    assert catalog.load_table("db.v4").metadata_location == before  # a dry run commits nothing


def test_table_commands(uri: str) -> None:
    listed = firn("table", "list", "--catalog", uri)
    assert listed.exit_code == 0 and listed.stdout.split() == ["db.v2", "db.v4"]
    assert json.loads(firn("table", "list", "db", "--catalog", uri, "--json").stdout) == ["db.v2", "db.v4"]

    shown = json.loads(firn("table", "show", "db.v4", "--catalog", uri, "--json").stdout)
    assert shown["format_version"] == 4 and [f["name"] for f in shown["schema"]] == ["id", "name"]
    assert shown["maintenance_lease"] is None
    human = firn("table", "show", "db.v4", "--catalog", uri)
    assert human.exit_code == 0 and "maintenance lease" in human.stdout and "free" in human.stdout

    snaps = json.loads(firn("table", "snapshots", "db.v4", "--catalog", uri, "--json", "--limit", "2").stdout)
    assert len(snaps) == 2 and snaps[0]["summary"]["total-records"] == "3"
    assert "append" in firn("table", "snapshots", "db.v4", "--catalog", uri).stdout

    files = json.loads(firn("table", "files", "db.v4", "--catalog", uri, "--json", "--limit", "1").stdout)
    assert files["files"] == 3 and len(files["shown"]) == 1 and files["shown"][0]["records"] == 1
    assert "2 more" in firn("table", "files", "db.v4", "--catalog", uri, "--limit", "1").stdout

    health = json.loads(firn("table", "health", "db.v4", "--catalog", uri, "--json").stdout)
    assert health["data_files"] == 3 and health["root_data_files"] == 3
    human = firn("table", "health", "db.v4", "--catalog", uri).stdout
    # One presentation (firn.maintenance.present): labels without units, times 24-hour UTC,
    # the snapshot id whole.
    assert "root entries" in human and "_ms" not in human and " UTC" in human
    assert str(health["snapshot_id"]) in human.replace("\n", "").replace("│", "").replace(" ", "")
    narrow = firn("table", "snapshots", "db.v4", "--catalog", uri, env={"COLUMNS": "40"}).stdout
    assert "…" not in narrow  # ids folded, never cut


def test_catalog_from_the_group_or_the_environment(uri: str) -> None:
    assert firn("--catalog", uri, "table", "list").stdout.split() == ["db.v2", "db.v4"]
    assert firn("table", "list", env={"FIRN_CATALOG_URI": uri}).stdout.split() == ["db.v2", "db.v4"]
    props = firn("table", "list", "--catalog", uri, "-p", "sqlite.busy-timeout-ms=100")
    assert props.exit_code == 0
    # Another catalog in the same database sees none of these tables.
    other = make_sqlite_catalog(Path(uri[len("sqlite:///") :]).parent, name="other")
    other.create_namespace("x")
    other.close()
    assert firn("table", "list", "--catalog", uri, "--catalog-name", "other").stdout == ""
    assert firn("--catalog-name", "other", "table", "list", "--catalog", uri).stdout == ""


def test_flush_run_json_summary_and_progress(uri: str, catalog: SqlCatalog) -> None:
    plan = firn("maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true", "--dry-run")
    assert plan.exit_code == 0 and "would move data files into leaves" in plan.stdout
    assert catalog.load_table("db.v4").health().root_data_files == 3  # the dry run changed nothing

    ran = firn("maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true", "--json", "--progress")
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)
    assert result["operation"] == "flush_root" and result["data_files_moved"] == 3
    assert "flush_root on db.v4" in ran.stderr  # the progress display, on stderr
    assert catalog.load_table("db.v4").health().root_data_files == 0

    summary = firn("maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true")
    assert (
        summary.exit_code == 0
        and "data_files_moved" in summary.stdout
        and "flush_root on db.v4" in summary.stdout
    )


def test_orphans_report_recorded_deleted_and_kept_files(
    uri: str, catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = catalog.load_table("db.v2")
    stray = Path(local(t.location)) / "data" / "stray.parquet"
    stray.write_bytes(b"never committed")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "not-ours.parquet").write_bytes(b"another system's file")
    args = [
        "maintain",
        "orphans",
        "db.v2",
        "--catalog",
        uri,
        "-o",
        f"older-than={soon_ms()}",
        "-o",
        "force=true",
    ]

    plan = firn(*args, "--dry-run")
    assert plan.exit_code == 0 and "to record (first seen now" in plan.stdout and str(stray) in plan.stdout
    recorded = firn(*args, "-o", "dry-run=false")
    assert recorded.exit_code == 0, recorded.output
    assert (
        "recorded_file_locations" in recorded.stdout
        and f"recorded_file_locations: {stray}" in recorded.stdout
    )
    assert stray.exists()
    # A listing outside the table's own location: what is found there is kept, and says why.
    kept = firn(*args, "-o", "dry-run=false", "-o", f"location={elsewhere}")
    assert kept.exit_code == 0, kept.output
    assert (
        "kept_outside_location" in kept.stdout
        and f"skipped {elsewhere}/not-ours.parquet: kept" in kept.stdout
    )
    assert (elsewhere / "not-ours.parquet").exists()
    backdate_orphan_record(t, 2 * 24 * 3600 * 1000)
    deleted = firn(*args, "-o", "dry-run=false")
    assert deleted.exit_code == 0 and f"deleted_file_locations: {stray}" in deleted.stdout
    assert not stray.exists()


def test_every_operation_runs_for_real_with_a_json_result_or_a_summary(uri: str, catalog: SqlCatalog) -> None:
    t = make_table(catalog, "3", properties=MOR)  # db.events: small files and DVs
    fill(t, "3", appends=4, rows=20)
    for victim in (1, 6, 22, 41):
        t.delete(f"id = {victim}")
    before = ids(t)
    stray = Path(local(t.location)) / "data" / "stray.parquet"
    stray.write_bytes(b"never committed")
    soon = f"older-than={soon_ms()}"

    def run(short: str, *options: str) -> dict[str, Any]:
        done = firn("maintain", short, "db.events", "--catalog", uri, *options, "--json")
        assert done.exit_code == 0, done.output
        data: dict[str, Any] = json.loads(done.stdout)
        assert data["operation"] == registry.spec_for_table(short, 3).name
        assert ids(t.refresh()) == before  # maintenance never changes the rows
        return data

    dvs = run("rewrite-dvs", "-o", "rewrite-all=true", "-o", "min-input-files=1")
    assert dvs["snapshot_id"] and dvs["packed_dvs"] == 4
    compacted = run("compact", "-o", "min-input-files=2")
    assert compacted["rewritten_data_files_count"] == 16 and compacted["added_data_files_count"] == 4
    manifests = run("rewrite-manifests")
    assert manifests["snapshot_id"] and manifests["rewritten_manifests_count"] > 1
    history = len(t.snapshots())
    expired = run("expire", "-o", soon, "-o", "retain-last=1")
    assert len(expired["expired_snapshot_ids"]) == history - 1 and len(t.snapshots()) == 1
    assert expired["deleted_files"]["data_files"] == 16  # the files compaction replaced
    listed = run("orphans", "-o", soon, "-o", "force=true")  # a dry run unless told otherwise
    assert (
        listed["dry_run"]
        and [local(p) for p in listed["orphan_file_locations"]] == [str(stray)]
        and stray.exists()
    )
    recorded = run("orphans", "-o", soon, "-o", "force=true", "-o", "dry-run=false")  # phase one
    assert [local(p) for p in recorded["recorded_file_locations"]] == [str(stray)]
    assert recorded["deleted_files"] == 0 and recorded["kept_outside_location"] == 0 and stray.exists()
    backdate_orphan_record(t, 2 * 24 * 3600 * 1000)  # recorded two days ago: past the grace
    removed = run("orphans", "-o", soon, "-o", "force=true", "-o", "dry-run=false")
    assert removed["deleted_files"] == 1 and not stray.exists()
    assert [local(p) for p in removed["deleted_file_locations"]] == [str(stray)]

    # Without --json: progress on stderr, a summary table on stdout.
    t.append(events(5, start=500))
    t.append(events(5, start=600))
    human = firn("maintain", "compact", "db.events", "--catalog", uri, "-o", "rewrite-all=true", "--progress")
    assert human.exit_code == 0, human.output
    assert "rewrite_data_files on db.events: work units" in human.stderr
    assert "rewrite_data_files on db.events" in human.stdout and "rewritten_data_files_count" in human.stdout


README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_commands() -> list[list[str]]:
    """The ``firn`` lines of the README's Maintenance section, as argument lists."""
    text = README.read_text()
    section = text[text.index("## Maintenance\n") : text.index("\n## ", text.index("## Maintenance\n") + 1)]
    out = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "firn":
                out.append(words[1:])
    return out


def test_the_readme_maintenance_commands_run(tmp_path: Path) -> None:
    commands = _readme_commands()
    ran = {tuple(c[:2]) for c in commands}
    assert {("maintain", short) for short in BRIEFING_NAMES} <= ran  # every operation is shown
    assert {("table", sub) for sub in ("list", "show", "snapshots", "files", "health")} <= ran
    c = make_sqlite_catalog(tmp_path, name="default")
    c.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("area", pa.string())])
    events_table = c.create_table(
        "db.events",
        schema=schema,
        partition_spec=[("area", "identity")],
        properties={"format-version": "3", **MOR},
    )
    people = c.create_table("db.people", schema=schema, properties={"format-version": "3", **MOR})
    v4 = c.create_table("db.events_v4", schema=schema)
    for i in range(4):
        batch = pa.table({"id": [2 * i, 2 * i + 1], "area": ["eu", "us"]}, schema=schema)
        for t in (events_table, people, v4):
            t.append(batch)
    people.delete("id = 1")
    people.delete("id = 4")
    c.close()
    env = {"FIRN_CATALOG_URI": f"sqlite:///{tmp_path / 'catalog.db'}"}
    for args in commands:
        result = firn(*args, env=env)
        assert result.exit_code == 0, (args, result.output)
        if "--json" in args:
            json.loads(result.stdout)


def test_recommend_and_run_the_recommendations(uri: str, catalog: SqlCatalog) -> None:
    t = catalog.load_table("db.v4")
    t.set_properties({"commit.root.max-data-files": "2"})
    recs = json.loads(firn("maintain", "recommend", "db.v4", "--catalog", uri, "--json").stdout)
    assert [r["operation"] for r in recs] == ["flush_root"] and "commit.root.max-data-files = 2" in recs[0][
        "reason"
    ]
    human = firn("maintain", "recommend", "db.v4", "--catalog", uri)
    assert "1. flush_root\n   why: the root holds 3 data files" in human.stdout
    assert "gain: It rewrites or deletes up to 3" in human.stdout and "KiB" in human.stdout
    ran = json.loads(firn("maintain", "recommend", "db.v4", "--catalog", uri, "--run", "--json").stdout)
    assert [r["operation"] for r in ran["results"]] == ["flush_root"] and ran["results"][0][
        "data_files_moved"
    ] == 3
    assert "nothing to do" in firn("maintain", "recommend", "db.v4", "--catalog", uri).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["table", "show", "db.nope"], "table 'db.nope' does not exist"),
        (["table", "show", "nope"], "needs a namespace"),
        (
            ["maintain", "flush", "db.v4", "-o", "forced=true"],
            "flush_root has no option 'forced'; valid options:",
        ),
        (["maintain", "flush", "db.v4", "-o", "force=maybe"], "option 'force' must be true or false"),
        (["maintain", "flush", "db.v4", "-o", "force"], "--option must be KEY=VALUE"),
        (["maintain", "flush", "db.v2"], "needs a V4 table"),
        (["table", "list", "-p", "novalue"], "--catalog-property must be KEY=VALUE"),
        (["maintain", "expire"], "Missing argument 'TABLE'. (see '"),
        (["maintain", "expire", "db.v4", "--dry-rn"], "No such option '--dry-rn'"),
        (["maintain", "defragment", "db.v4"], "No such command 'defragment'"),
        (["table", "snapshots", "db.v4", "--limit", "0"], "Invalid value for '--limit'"),
        (
            ["maintain", "expire", "db.v4", "-o", "older-than=yesterday"],
            "epoch milliseconds or an ISO-8601 time",
        ),
        (
            ["maintain", "expire", "db.v4", "-o", "older-than=2024-01-02T00:00:00"],
            "needs a time with an offset",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(uri: str, args: list[str], message: str) -> None:
    result = firn(*args, "--catalog", uri)
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith("firn: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("catalog_args", "message"),
    [
        ([], "no catalog: pass --catalog URI or set FIRN_CATALOG_URI"),
        (["--catalog", "bogus://x"], "unsupported catalog URI"),
        (["--catalog", "postgresql://user@host:notaport/db"], "invalid catalog URI"),
        (
            ["--catalog", "sqlite:////no/such/catalog.db"],
            "catalog database /no/such/catalog.db does not exist",
        ),
        (
            ["--catalog", "sqlite://relative.db"],
            "cannot open catalog sqlite://relative.db: catalog 'default': 'sqlite://relative.db' is not a SQLite catalog URI",
        ),
        (["--catalog", "not a uri"], "unsupported catalog URI 'not a uri'"),
    ],
)
def test_bad_catalogs_exit_2(catalog_args: list[str], message: str) -> None:
    result = firn("table", "list", *catalog_args)
    assert result.exit_code == EXIT_BAD_INPUT and message in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("catalog", "shown"),
    [
        # Found in issue 18: "firn: error: cannot open catalog postgresql://u:SECRETPW9@..."
        ("postgresql://u:SECRETPW9@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"),
        ("postgresql://u:p%40SECRETPW9@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"),
        ("postgresql://u@127.0.0.1:1/db?password=SECRETPW9", "postgresql://u@127.0.0.1:1/db?password=***"),
        ("bogus://u:SECRETPW9@host/x", "unsupported catalog URI 'bogus://u:***@host/x'"),
    ],
)
def test_catalog_errors_never_show_a_password(catalog: str, shown: str) -> None:
    # Port 1 refuses at once: opening the catalog fails and the error names the URI.
    result = firn("table", "list", "--catalog", catalog, "-p", "s3.secret-access-key=PROPSECRET7")
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith("firn: error: ") and shown in result.stderr
    assert "SECRETPW9" not in result.output + result.stderr and "PROPSECRET7" not in result.stderr


def test_a_held_lease_exits_3_naming_the_holder(uri: str, catalog: SqlCatalog) -> None:
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with catalog.maintenance_lease("db.v4", "expire_snapshots", owner="airflow:42:nightly.expire"):
            holding.set()
            release.wait(30)

    th = threading.Thread(target=hold)
    th.start()
    try:
        assert holding.wait(30)
        result = firn("maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true")
        assert result.exit_code == EXIT_LEASE_HELD
        assert "held by airflow:42:nightly.expire (running expire_snapshots since" in result.stderr
        shown = json.loads(firn("table", "show", "db.v4", "--catalog", uri, "--json").stdout)
        assert shown["maintenance_lease"]["owner"] == "airflow:42:nightly.expire"
    finally:
        release.set()
        th.join()
    assert firn("maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true").exit_code == 0


def _installed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("firn")
    return subprocess.run(
        [str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_installed_script(tmp_path: Path, uri: str) -> None:
    health = _installed("table", "health", "db.v4", "--catalog", uri, "--json", cwd=tmp_path)
    assert health.returncode == 0, health.stderr
    assert json.loads(health.stdout)["root_data_files"] == 3
    ran = _installed(
        "maintain", "flush", "db.v4", "--catalog", uri, "-o", "force=true", "--json", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    assert result["operation"] == "flush_root" and result["data_files_moved"] == 3 and result["snapshot_id"]
    bad = _installed("table", "show", "db.nope", "--catalog", uri, cwd=tmp_path)
    assert (
        bad.returncode == EXIT_BAD_INPUT
        and bad.stderr == "firn: error: table 'db.nope' does not exist in catalog 'default'\n"
    )


def test_messages_name_the_cli_syntax(uri: str) -> None:
    """The orphan dry run tells a CLI user the CLI's option, not Python's keyword."""
    out = firn("maintain", "orphans", "db.v4", "--catalog", uri, "--dry-run").stdout
    assert "pass -o dry-run=false" in out and "dry_run=False" not in out
    # An error from the library that names a keyword names the CLI's option instead.
    now = str(int(time.time() * 1000))
    young = firn("maintain", "orphans", "db.v4", "--catalog", uri, "-o", f"older-than={now}")
    assert young.exit_code == 2 and "Pass -o force=true if no writer is running" in young.output
    assert "force=True" not in young.output


def test_plain_output_is_tab_separated_and_whole(uri: str, catalog: SqlCatalog) -> None:
    """``--plain``: one tab-separated line per row, ids and paths whole, for cut and awk."""
    t = catalog.load_table("db.v4")
    snapshot_id = t.metadata.current_snapshot_id
    lines = firn("table", "snapshots", "db.v4", "--catalog", uri, "--plain").stdout.splitlines()
    assert lines[0] == "snapshot\tparent\tcommitted\toperation\tdata files\trecords"
    assert lines[1].split("\t")[0] == str(snapshot_id) and lines[1].split("\t")[2].endswith(" UTC")
    files = firn("table", "files", "db.v4", "--catalog", uri, "--plain").stdout.splitlines()
    live = {task.file.file_path for task in t.scan().plan_files()}
    assert {line.split("\t")[0] for line in files[1:4]} == live
    health = dict(
        line.split("\t")
        for line in firn("table", "health", "db.v4", "--catalog", uri, "--plain").stdout.splitlines()
    )
    assert health["snapshot id"] == str(snapshot_id) and health["delete ratio"] == "0.0%"
    t.set_properties({"commit.root.max-data-files": "2"})
    recs = firn("maintain", "recommend", "db.v4", "--catalog", uri, "--plain").stdout.splitlines()
    assert recs[0] == "operation\toptions\treason\tgain"
    operation, options, reason, gain = recs[1].split("\t")
    assert operation == "flush_root" and options == "" and "commit.root.max-data-files = 2" in reason
    assert gain.endswith(".")


def test_recommend_run_skips_what_an_earlier_operation_did(uri: str, catalog: SqlCatalog) -> None:
    """Compaction leaves one file in the V4 root, so the flush recommended beside it has
    nothing left to do: ``--run`` asks again before each step and does not run it."""
    t = catalog.load_table("db.v4")
    t.set_properties({"commit.root.max-data-files": "2", "maintenance.compact.min-small-files": "3"})
    recs = json.loads(firn("maintain", "recommend", "db.v4", "--catalog", uri, "--json").stdout)
    assert [r["operation"] for r in recs] == ["rewrite_data_files", "flush_root"]
    ran = json.loads(firn("maintain", "recommend", "db.v4", "--catalog", uri, "--run", "--json").stdout)
    assert [r["operation"] for r in ran["results"]] == ["rewrite_data_files"]
    assert ran["satisfied"] == ["flush_root"]
    assert "nothing to do" in firn("maintain", "recommend", "db.v4", "--catalog", uri).stdout
