"""``spark_min_bytes`` is templated (a DAG param can send small tables to Spark too): the
rendered text or number becomes a byte count, anything else one clear error."""

from __future__ import annotations

import pytest

from firn.errors import ValidationError
from firn_airflow.operators import FirnRewriteDataFilesOperator

pytestmark = pytest.mark.airflow


def _op(value: object) -> FirnRewriteDataFilesOperator:
    return FirnRewriteDataFilesOperator(
        task_id="compact", table="db.t", execution="auto", spark_min_bytes=value
    )  # type: ignore[arg-type]


def test_spark_min_bytes_is_a_template_field() -> None:
    assert "spark_min_bytes" in FirnRewriteDataFilesOperator.template_fields


@pytest.mark.parametrize(("value", "expected"), [(0, 0), ("0", 0), ("1073741824", 1 << 30), (512, 512)])
def test_rendered_values_become_byte_counts(value: object, expected: int) -> None:
    assert _op(value)._spark_min_bytes() == expected


@pytest.mark.parametrize("value", ["1 GiB", "", None, True, -1, "-5", 1.5])
def test_other_values_are_one_clear_error(value: object) -> None:
    with pytest.raises(ValidationError, match="spark_min_bytes"):
        _op(value)._spark_min_bytes()
