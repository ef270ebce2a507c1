from __future__ import annotations

import math

import pytest

from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    PartitionEvaluator,
    ResidualEvaluator,
    bind,
    compile_row_filter,
    parse,
    to_string,
)
from firn.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from firn.spec.schema import Schema
from firn.spec.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from firn.spec.types import DOUBLE, INT, STRING, NestedField
from tests.firn.expressions.helpers import SCHEMA

NAN = math.nan
DAY_US = 86_400_000_000
SPEC = PartitionSpec(
    3,
    (
        PartitionField(8, 1000, DayTransform(), "ts_day"),
        PartitionField(3, 1001, IdentityTransform(), "name"),
        PartitionField(1, 1002, BucketTransform(16), "id_bucket"),
        PartitionField(4, 1003, IdentityTransform(), "x"),
        PartitionField(2, 1004, TruncateTransform(10), "i_trunc"),
    ),
)
JAN2 = 19724  # 2024-01-02 as days since the epoch


def evaluator(text: str) -> PartitionEvaluator:
    return PartitionEvaluator.for_row_filter(SPEC, SCHEMA, parse(text))


@pytest.mark.parametrize(
    ("text", "partition", "expected"),
    [
        ("ts >= '2024-01-02T10:00:00'", (JAN2, "a", 0, 1.0, 0), True),
        ("ts >= '2024-01-02T10:00:00'", (JAN2 - 1, "a", 0, 1.0, 0), False),
        ("ts >= '2024-01-02T10:00:00'", (None, "a", 0, 1.0, 0), False),
        ("name = 'a'", (JAN2, "a", 0, 1.0, 0), True),
        ("name = 'a'", (JAN2, "b", 0, 1.0, 0), False),
        ("name != 'a'", (JAN2, None, 0, 1.0, 0), True),  # null != 'a' is true
        ("name not in ('a', 'b')", (JAN2, None, 0, 1.0, 0), True),
        ("name in ('a', 'b')", (JAN2, None, 0, 1.0, 0), False),
        ("name like 'a%'", (JAN2, None, 0, 1.0, 0), False),
        ("name not like 'a%'", (JAN2, None, 0, 1.0, 0), True),
        ("name not like 'a%'", (JAN2, "abc", 0, 1.0, 0), False),
        ("name is null", (JAN2, None, 0, 1.0, 0), True),
        ("name is not null", (JAN2, None, 0, 1.0, 0), False),
        ("id = 34", (JAN2, "a", 3, 1.0, 0), True),  # bucket[16](34) = 3
        ("id = 34", (JAN2, "a", 4, 1.0, 0), False),
        ("id != 34", (JAN2, "a", 3, 1.0, 0), True),  # inclusive: cannot be ruled out
        ("x is nan", (JAN2, "a", 0, NAN, 0), True),
        ("x is nan", (JAN2, "a", 0, None, 0), False),
        ("x is not nan", (JAN2, "a", 0, None, 0), True),
        ("x is not nan", (JAN2, "a", 0, NAN, 0), False),
        ("x < 5", (JAN2, "a", 0, NAN, 0), False),
        ("x >= 5", (JAN2, "a", 0, NAN, 0), False),
        ("x != 5", (JAN2, "a", 0, NAN, 0), True),
        ("x = 0", (JAN2, "a", 0, -0.0, 0), True),  # IEEE: -0.0 = 0.0
        ("x in (0, 1)", (JAN2, "a", 0, -0.0, 0), True),
        ("x in (2, 1)", (JAN2, "a", 0, NAN, 0), False),
        ("x not in (2, 1)", (JAN2, "a", 0, NAN, 0), True),
        ("i > 25", (JAN2, "a", 0, 1.0, 20), True),
        ("i > 29", (JAN2, "a", 0, 1.0, 20), False),
        ("i < 0", (JAN2, "a", 0, 1.0, -10), True),
        ("i = 1 or name = 'z'", (JAN2, "z", 0, 1.0, 10), True),
        ("i = 1 and name = 'z'", (JAN2, "z", 0, 1.0, 10), False),
        ("not (name = 'a')", (JAN2, "a", 0, 1.0, 0), False),
        ("not (name = 'a')", (JAN2, None, 0, 1.0, 0), True),
        ("true", (None, None, None, None, None), True),
        ("false", (JAN2, "a", 0, 1.0, 0), False),
    ],
)
def test_partition_evaluator(text: str, partition: tuple[object, ...], expected: bool) -> None:
    assert evaluator(text).eval(partition) is expected


def test_compile_row_filter_needs_positions_for_every_field() -> None:
    bound = bind(SCHEMA, parse("i = 1"))
    with pytest.raises(ValueError, match="not in the evaluated struct"):
        compile_row_filter(bound, {1: 0})
    fn = compile_row_filter(bound, {2: 1})
    assert fn((None, 1)) and not fn((None, 2))


def test_compiled_source_and_closure_fallback_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    import firn.expressions.partition_evaluator as module

    texts = [
        "name like 'a%' or name not like 'ab%' and x is nan",
        "x is not nan and i in (10, 20) or name not in ('a', 'b')",
        "ts >= '2024-01-02T10:00:00' and id != 34 or name is null",
        "not (x < 1) and name is not null",
    ]
    partitions = [
        (JAN2, "abc", 3, NAN, 10),
        (JAN2 + 1, None, 4, 0.5, None),
        (None, "a", 0, None, 20),
        (JAN2 - 5, "b", 1, 2.0, 30),
    ]
    compiled = {t: evaluator(t) for t in texts}

    def broken_compile(*args: object, **kwargs: object) -> object:
        raise SyntaxError("too many nested parentheses")

    monkeypatch.setattr(module, "compile", broken_compile, raising=False)
    for text in texts:
        fallback = evaluator(text)
        assert [fallback.eval(p) for p in partitions] == [compiled[text].eval(p) for p in partitions], text


def test_long_generated_filters_stay_shallow() -> None:
    text = " or ".join(f"i = {k}" for k in range(3000))
    fn = compile_row_filter(bind(SCHEMA, parse(text)), {2: 0})
    assert fn((2999,)) and fn((0,)) and not fn((3000,)) and not fn((None,))


# -- residuals ----------------------------------------------------------------------------------

DAY_SPEC = PartitionSpec(1, (PartitionField(8, 1000, DayTransform(), "ts_day"),))


def residual(spec: PartitionSpec, text: str, partition: tuple[object, ...]) -> str:
    return to_string(ResidualEvaluator(spec, SCHEMA, parse(text)).residual_for(partition))


def test_residual_drops_predicates_decided_by_the_partition() -> None:
    text = "ts >= '2024-01-02T10:00:00' and name = 'a'"
    assert residual(DAY_SPEC, text, (JAN2 + 1,)) == "name = 'a'"
    assert residual(DAY_SPEC, text, (JAN2,)) == "ts >= '2024-01-02T10:00:00' AND name = 'a'"
    assert residual(DAY_SPEC, text, (JAN2 - 1,)) == "false"
    assert residual(DAY_SPEC, text, (None,)) == "false"
    text = "ts < '2024-01-02T00:00:00' or name = 'a'"
    assert residual(DAY_SPEC, text, (JAN2 - 1,)) == "true"
    assert residual(DAY_SPEC, text, (JAN2,)) == "name = 'a'"


def test_residual_with_identity_and_nulls() -> None:
    spec = PartitionSpec(1, (PartitionField(3, 1000, IdentityTransform(), "name"),))
    assert residual(spec, "name = 'a' and i = 1", ("a",)) == "i = 1"
    assert residual(spec, "name = 'a' and i = 1", ("b",)) == "false"
    assert residual(spec, "name != 'a'", (None,)) == "true"
    assert residual(spec, "not (name = 'a')", ("b",)) == "true"
    assert residual(spec, "name < 'b'", (None,)) == "false"
    assert residual(spec, "name is null or i > 3", (None,)) == "true"


def test_residual_unpartitioned_and_empty_filters() -> None:
    evaluator = ResidualEvaluator(UNPARTITIONED, SCHEMA, parse("i = 1"))
    assert to_string(evaluator.residual_for(())) == "i = 1"
    assert ResidualEvaluator(DAY_SPEC, SCHEMA, AlwaysTrue()).residual_for((1,)) == AlwaysTrue()
    assert ResidualEvaluator(DAY_SPEC, SCHEMA, AlwaysFalse()).residual_for((1,)) == AlwaysFalse()


def test_residual_truncate_keeps_predicate_inside_the_partition_range() -> None:
    schema = Schema(NestedField(1, "n", INT), NestedField(2, "s", STRING), NestedField(3, "v", DOUBLE))
    spec = PartitionSpec(1, (PartitionField(1, 1000, TruncateTransform(10), "n_trunc"),))
    ev = ResidualEvaluator(spec, schema, parse("n >= 15"))
    assert ev.residual_for((20,)) == AlwaysTrue()
    assert to_string(ev.residual_for((10,))) == "n >= 15"
    assert ev.residual_for((0,)) == AlwaysFalse()
