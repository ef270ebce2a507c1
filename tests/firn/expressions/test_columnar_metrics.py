"""The vectorized metrics evaluator over columnar stats (one row per file), on hand-made stats.

Files (``id`` long, ``x`` double, ``s`` string):

0. ids 10..20, no nulls           x 1.0..2.0, no NaN     s "abc".."abz"
1. ids 30..40, 2 of 5 null        x all NaN              s "b".."c"
2. all 4 ids null (no bounds)     x unknown counts       s no stats at all
3. ids unknown (null counts)      x 0.0..0.0             s "zz".."zz"
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

from firn.expressions import bind, parse
from firn.expressions.columnar_metrics import ColumnStats, might_match
from firn.spec.schema import Schema
from firn.spec.types import DOUBLE, LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG), NestedField(2, "x", DOUBLE), NestedField(3, "s", STRING))


def _stats(
    t: pa.DataType, lower: list, upper: list, values: list, nulls: list, nans: list | None
) -> ColumnStats:
    return ColumnStats(
        lower=pa.array(lower, t),
        upper=pa.array(upper, t),
        value_count=pa.array(values, pa.int64()),
        null_count=pa.array(nulls, pa.int64()),
        nan_count=None if nans is None else pa.array(nans, pa.int64()),
        scalar=lambda v: pa.scalar(v, t),
    )


@dataclass
class FakeStats:
    columns: dict[int, ColumnStats]
    num_rows: int = 4

    def column(self, field_id: int) -> ColumnStats | None:
        return self.columns.get(field_id)


STATS = FakeStats(
    {
        1: _stats(
            pa.int64(), [10, 30, None, None], [20, 40, None, None], [5, 5, 4, None], [0, 2, 4, None], None
        ),
        2: _stats(
            pa.float64(),
            [1.0, None, None, 0.0],
            [2.0, None, None, 0.0],
            [5, 5, 4, 3],
            [0, 0, None, 0],
            [0, 5, None, 0],
        ),
        3: _stats(
            pa.string(), ["abc", "b", None, "zz"], ["abz", "c", None, "zz"], [5, 5, 4, 3], [0, 0, 0, 0], None
        ),
    }
)


def mask(text: str, stats: FakeStats = STATS) -> list[bool]:
    out = might_match(stats, bind(SCHEMA, parse(text)))
    assert isinstance(out, np.ndarray) and out.dtype == np.bool_
    return out.tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 15", [True, False, False, True]),
        ("id <= 10", [True, False, False, True]),
        ("id > 35", [False, True, False, True]),
        ("id >= 40", [False, True, False, True]),
        ("id = 25", [False, False, False, True]),
        ("id = 35", [False, True, False, True]),
        ("id != 15", [True, True, True, True]),
        ("id in (5, 12)", [True, False, False, True]),
        ("id in (5, 25)", [True, False, False, True]),  # only the literals' range is checked
        ("id not in (15)", [True, True, True, True]),
        ("id is null", [False, True, True, True]),
        ("id is not null", [True, True, False, True]),
        ("x is nan", [False, True, True, False]),
        ("x is not nan", [True, False, True, True]),
        ("s like 'ab%'", [True, False, True, False]),
        ("s like 'bx%'", [False, True, True, False]),
        ("s not like 'ab%'", [True, True, True, True]),
        ("id < 15 or id > 35", [True, True, False, True]),
        ("id < 15 and s like 'zz%'", [False, False, False, True]),
        ("not (id >= 15)", [True, True, True, True]),
        ("true", [True, True, True, True]),
        ("false", [False, False, False, False]),
    ],
)
def test_prunes_only_what_the_stats_prove(text: str, expected: list[bool]) -> None:
    assert mask(text) == expected


def test_columns_without_stats_may_match() -> None:
    no_stats = FakeStats({})
    assert mask("id = 1 and x is nan and s like 'q%'", no_stats) == [True] * 4


def test_empty_stats_table() -> None:
    assert mask("id = 1", FakeStats({}, num_rows=0)) == []


def test_a_column_without_nan_counts_holds_no_nan() -> None:
    x = _stats(pa.float64(), [1.0] * 4, [2.0] * 4, [5] * 4, [0] * 4, None)
    stats = FakeStats({2: x})
    assert mask("x is nan", stats) == [False] * 4
    assert mask("x is not nan", stats) == [True] * 4
