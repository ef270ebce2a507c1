from __future__ import annotations

import pickle

import pytest

from firn.errors import ValidationError
from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Not,
    Operation,
    Or,
    Reference,
    UnboundLiteralPredicate,
    UnboundSetPredicate,
    UnboundUnaryPredicate,
    and_,
    col,
    equal_to,
    is_in,
    not_,
    or_,
)

A = col("a") == 1
B = col("b") > 2
C = col("c").is_null()


def test_constants_are_singletons_and_pickle() -> None:
    assert AlwaysTrue() is AlwaysTrue()
    assert AlwaysFalse() is AlwaysFalse()
    assert pickle.loads(pickle.dumps(AlwaysTrue())) is AlwaysTrue()
    assert pickle.loads(pickle.dumps(AlwaysFalse())) is AlwaysFalse()


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (And(A, AlwaysTrue()), A),
        (And(AlwaysTrue(), A), A),
        (And(A, AlwaysFalse()), AlwaysFalse()),
        (And(AlwaysFalse(), A), AlwaysFalse()),
        (Or(A, AlwaysFalse()), A),
        (Or(AlwaysFalse(), A), A),
        (Or(A, AlwaysTrue()), AlwaysTrue()),
        (Or(AlwaysTrue(), A), AlwaysTrue()),
        (Not(AlwaysTrue()), AlwaysFalse()),
        (Not(AlwaysFalse()), AlwaysTrue()),
        (Not(Not(A)), A),
        (And(A, A), A),
        (Or(B, B), B),
    ],
)
def test_simplifying_constructors(built: object, expected: object) -> None:
    assert built == expected


def test_variadic_and_or_nest_left() -> None:
    assert And(A, B, C) == And(And(A, B), C)
    assert Or(A, B, C) == Or(Or(A, B), C)
    assert and_() == AlwaysTrue()
    assert or_() == AlwaysFalse()
    assert and_(A, B) == And(A, B)
    assert or_(A, B, C) == Or(A, Or(B, C))  # balanced
    assert and_(A, B, C, A) == And(And(A, B), And(C, A))
    assert not_(A) == Not(A)


def test_operators_build_tree() -> None:
    conjunction, disjunction, negation = A & B, A | B, ~A
    assert conjunction == And(A, B)
    assert disjunction == Or(A, B)
    assert negation == Not(A)
    assert ~negation == A


def test_expressions_are_hashable_and_equal_by_value() -> None:
    assert hash(And(A, B)) == hash(And(col("a") == 1, col("b") > 2))
    assert And(A, B) != And(B, A)
    assert And(A, B) != Or(A, B)
    assert {And(A, B), And(A, B), Not(C)} == {And(A, B), Not(C)}
    assert pickle.loads(pickle.dumps(Or(And(A, B), Not(C)))) == Or(And(A, B), Not(C))


def test_expressions_are_immutable() -> None:
    expr = And(A, B)
    assert isinstance(expr, And)
    with pytest.raises(AttributeError):
        expr.left = C  # type: ignore[misc]
    with pytest.raises(AttributeError):
        A.op = Operation.LT  # type: ignore[misc]


def test_truthiness_is_refused() -> None:
    # `col("a") == 1 and col("b") == 2` must not silently become the second predicate.
    with pytest.raises(TypeError, match=r"& \| ~"):
        bool(A)
    with pytest.raises(TypeError):
        _ = (col("a") == 1) and (col("b") == 2)
    with pytest.raises(TypeError):
        bool(col("a"))


def test_connectives_reject_non_expressions() -> None:
    with pytest.raises(TypeError, match="filter expressions"):
        And(A, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Not("a = 1")  # type: ignore[arg-type]


def test_builder_predicates() -> None:
    ref = Reference("a")
    assert (col("a") < 1) == UnboundLiteralPredicate(Operation.LT, ref, 1)
    assert (col("a") <= 1) == UnboundLiteralPredicate(Operation.LT_EQ, ref, 1)
    assert (col("a") > 1) == UnboundLiteralPredicate(Operation.GT, ref, 1)
    assert (col("a") >= 1) == UnboundLiteralPredicate(Operation.GT_EQ, ref, 1)
    assert (col("a") == 1) == UnboundLiteralPredicate(Operation.EQ, ref, 1)
    assert (col("a") != 1) == UnboundLiteralPredicate(Operation.NOT_EQ, ref, 1)
    assert (5 < col("a")) == UnboundLiteralPredicate(Operation.GT, ref, 5)  # noqa: SIM300 (reflected)
    assert col("a").isin([1, 2, 2]) == UnboundSetPredicate(Operation.IN, ref, (1, 2))
    assert col("a").not_in((3,)) == UnboundSetPredicate(Operation.NOT_IN, ref, [3])
    assert col("a").is_null() == UnboundUnaryPredicate(Operation.IS_NULL, ref)
    assert col("a").not_null() == UnboundUnaryPredicate(Operation.NOT_NULL, ref)
    assert col("a").is_nan() == UnboundUnaryPredicate(Operation.IS_NAN, ref)
    assert col("a").not_nan() == UnboundUnaryPredicate(Operation.NOT_NAN, ref)
    assert col("a").starts_with("x") == UnboundLiteralPredicate(Operation.STARTS_WITH, ref, "x")
    assert col("a").not_starts_with("x") == UnboundLiteralPredicate(Operation.NOT_STARTS_WITH, ref, "x")
    assert col("a").between(1, 5) == And(col("a") >= 1, col("a") <= 5)
    assert equal_to("a", 1) == (col("a") == 1)
    assert is_in("a", [1, 2]) == col("a").isin([1, 2])


def test_set_predicate_dedupes_keeping_order() -> None:
    pred = col("a").isin([3, 1, 3, 2, 1])
    assert isinstance(pred, UnboundSetPredicate)
    assert pred.literals == (3, 1, 2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: col("a") == None, "use is_null"),  # noqa: E711
        (lambda: col("a") < float("nan"), "use is_nan"),
        (lambda: col("a").isin([1, float("nan")]), "use is_nan"),
        (lambda: col("a").isin("abc"), "collection of literals"),
        (lambda: col("a") == [1, 2], "not a single value"),
        (lambda: col("a") > col("b"), "two columns"),
        (lambda: col(""), "non-empty"),
    ],
)
def test_builder_rejects_bad_literals(build: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build()  # type: ignore[operator]


def test_column_is_not_hashable() -> None:
    with pytest.raises(TypeError):
        hash(col("a"))
