"""A maintenance operation registered at run time has an operator (and lineage figures)
without any Airflow-side edit: the operators read ``firn.maintenance.registry``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn_airflow.operators.lineage import maintenance_lineage
from firn_airflow.operators.maintenance import FirnRewriteDataFilesOperator, operator_for
from tests.firn_airflow.operators.helpers import set_firn_connection
from tests.fixtures.spark_tables import spark_catalog
from tests.fixtures.toy_operation import NAME, SHORT, toy_registered

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def test_a_registered_toy_operation_runs_through_an_operator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = spark_catalog(tmp_path)
    t = catalog.create_table("db.toy", schema=SCHEMA)
    for i in range(2):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    set_firn_connection(monkeypatch, "firn_toy", tmp_path)
    assert operator_for("compact") is FirnRewriteDataFilesOperator
    with toy_registered():
        cls = operator_for(SHORT)
        assert cls.OPERATION == NAME and cls.__name__ == "FirnCountDataFilesOperator"
        op = cls(task_id="toy", table="db.toy", firn_conn_id="firn_toy", execution="worker")
        result = op.execute(context={})  # type: ignore[arg-type]
        assert result["operation"] == NAME and result["counted"] == 2
        figures = maintenance_lineage([result])
        assert figures.operations == (NAME,) and figures.files_rewritten == 2
