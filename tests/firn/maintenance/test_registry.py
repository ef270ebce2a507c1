"""The registry of maintenance operations: every layer reads it, so a toy operation registered
at run time is a ``table.maintenance`` operation, a CLI subcommand and a Spark job operation."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from firn.catalog.sql import SqlCatalog
from firn.cli import main
from firn.errors import ValidationError
from firn.maintenance import TableMaintenance, registry
from firn.maintenance.operations import NIGHTLY_ORDER
from firn.maintenance.options import RewriteDataFilesOptions
from firn.spark import job
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.toy_operation import SHORT, CountDataFilesResult, toy_registered

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    c = make_sqlite_catalog(tmp_path, name="default")
    c.create_namespace("db")
    t = c.create_table("db.t", schema=SCHEMA, properties={"format-version": "2"})
    for i in range(3):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return c


def test_the_registry_holds_the_nightly_chain_and_the_v2_fallback() -> None:
    assert registry.nightly_order() == list(NIGHTLY_ORDER)
    assert registry.spec("compact").name == "rewrite_data_files"
    assert registry.spec_for_table("rewrite-dvs", 2).name == "rewrite_position_delete_files"
    assert registry.spec_for_table("rewrite-dvs", 3).name == "rewrite_deletion_vectors"
    assert registry.spec("rewrite_data_files").lineage["files_rewritten"] == "rewritten_data_files_count"
    with pytest.raises(ValidationError, match="did you mean 'compact'"):
        registry.spec("compcat")


def test_each_method_signature_is_its_options_dataclass() -> None:
    for spec in registry.specs():
        method = getattr(TableMaintenance, spec.name)
        params = dict(inspect.signature(method).parameters)
        params.pop("self")
        assert params == dict(inspect.signature(spec.options).parameters), spec.name
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert inspect.signature(TableMaintenance.rewrite_data_files).parameters["min_input_files"].default == 5


def test_plans_hold_the_options_dataclass_and_serialise_by_iceberg_names(catalog: SqlCatalog) -> None:
    t = catalog.load_table("db.t")
    plan = t.maintenance.rewrite_data_files(min_input_files=2, partial_progress_enabled=True).plan()
    assert isinstance(plan.options, RewriteDataFilesOptions)
    assert plan.options.min_input_files == 2 and plan.options.strategy == "binpack"
    data = plan.to_dict()["options"]
    assert data["min-input-files"] == 2 and data["partial-progress.enabled"] is True
    assert "where" not in data  # not given: left out, as before
    assert type(plan).from_json(plan.to_json()) == plan


def test_a_toy_operation_is_a_table_operation_a_cli_command_and_a_job_operation(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    with toy_registered():
        t = catalog.load_table("db.t")
        result = t.maintenance.operation(SHORT, {"min-file-size-bytes": "1"}).run()
        assert isinstance(result, CountDataFilesResult) and result.counted == 3
        assert result.lineage_figures() == {"files_rewritten": 3, "bytes_rewritten": result.counted_bytes}
        with pytest.raises(ValidationError, match="did you mean 'branch'"):
            t.maintenance.operation(SHORT, {"brnch": "main"})

        done = CliRunner().invoke(main, ["maintain", SHORT, "db.t", "--catalog", uri, "--json"])
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["counted"] == 3
        listed = CliRunner().invoke(main, ["maintain", "--help"])
        assert SHORT in listed.output

        out = tmp_path / "result.json"
        args = job.parse_args([SHORT, "--catalog", uri, "--table", "db.t", "--result", str(out), "--dry-run"])
        entries, failed = job.run(args)
        assert failed == 0 and entries[0]["operation"] == "count_data_files"
        assert entries[0]["dry_run"] is True and entries[0]["counted"] == 3
        assert "would count 3 data files" in entries[0]["description"]
    # Gone once unregistered.
    with pytest.raises(ValidationError, match="unknown maintenance operation"):
        registry.spec(SHORT)
    assert CliRunner().invoke(main, ["maintain", SHORT, "db.t", "--catalog", uri]).exit_code == 2
