from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from firn.errors import ValidationError
from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    Not,
    arrow_scalar,
    bind,
    evaluate,
    filter_data,
    parse,
    rewrite_not,
    to_arrow_expression,
)
from firn.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
)
from tests.firn.expressions.helpers import SCHEMA

NAN = math.nan
U1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
U2 = uuid.UUID("00000000-0000-0000-0000-000000000001")


@pytest.mark.parametrize(
    ("t", "value", "arrow_t", "as_py"),
    [
        (BOOLEAN, True, pa.bool_(), True),
        (INT, 5, pa.int32(), 5),
        (LONG, 2**40, pa.int64(), 2**40),
        (FLOAT, 1.5, pa.float32(), 1.5),
        (DOUBLE, 2.5, pa.float64(), 2.5),
        (DecimalType(9, 2), Decimal("1.50"), pa.decimal128(9, 2), Decimal("1.50")),
        (DATE, 19724, pa.date32(), dt.date(2024, 1, 2)),
        (TIME, 1_000_001, pa.time64("us"), dt.time(0, 0, 1, 1)),
        (TIMESTAMP, 1, pa.timestamp("us"), dt.datetime(1970, 1, 1, 0, 0, 0, 1)),
        (TIMESTAMPTZ, 0, pa.timestamp("us", tz="UTC"), dt.datetime(1970, 1, 1, tzinfo=dt.UTC)),
        (TIMESTAMP_NS, 7, pa.timestamp("ns"), None),
        (TIMESTAMPTZ_NS, 7, pa.timestamp("ns", tz="UTC"), None),
        (STRING, "é", pa.string(), "é"),
        (UUID, U1, pa.binary(16), U1.bytes),
        (FixedType(3), b"abc", pa.binary(3), b"abc"),
        (BINARY, b"\x00\xff", pa.binary(), b"\x00\xff"),
    ],
)
def test_arrow_scalar(t: IcebergType, value: object, arrow_t: pa.DataType, as_py: object) -> None:
    scalar = arrow_scalar(t, value)  # type: ignore[arg-type]
    assert scalar.type == arrow_t
    if as_py is None:
        assert scalar.value == value
    else:
        assert scalar.as_py() == as_py


TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
        "i": pa.array([1, None, 3, None, 5, 6], pa.int32()),
        "name": pa.array(["abc", None, "abd", "b", "", "ab"], pa.string()),
        "x": pa.array([1.0, NAN, None, -0.0, 0.0, 2.5], pa.float64()),
        "f": pa.array([1.5, None, NAN, 0.5, 2.0, -1.0], pa.float32()),
        "price": pa.array(
            [Decimal("1.50"), None, Decimal("2.00"), Decimal("0.01"), None, Decimal("3.33")],
            pa.decimal128(9, 2),
        ),
        "d": pa.array([19724, None, 19723, -1, 0, 19725], pa.date32()),
        "tstz": pa.array([0, None, -1, 1, 10**12, -(10**12)], pa.timestamp("us", tz="UTC")),
        "tsns": pa.array([0, None, -1, 1, 10**15, 5], pa.timestamp("ns")),
        "u": pa.array([U1.bytes, None, U2.bytes, U1.bytes, U2.bytes, None], pa.binary(16)),
        "flag": pa.array([True, False, None, True, False, None]),
        "addr": pa.array(
            [
                {"city": "Berlin", "zip": 1},
                None,
                {"city": "Bonn", "zip": None},
                {"city": "Köln", "zip": 3},
                None,
                {"city": "Bonn", "zip": 5},
            ],
            pa.struct([pa.field("city", pa.string()), pa.field("zip", pa.int32())]),
        ),
    }
)


def mask(text: str, data: pa.Table | pa.RecordBatch = TABLE) -> list[bool]:
    bound = bind(SCHEMA, parse(text))
    eager = evaluate(bound, data).to_pylist()
    lazy = data.filter(to_arrow_expression(bound)).column("id").to_pylist()
    # Both entry points select the same rows, and masks are never null.
    assert lazy == [row_id for row_id, keep in zip(data.column("id").to_pylist(), eager) if keep]
    assert None not in eager
    complement = evaluate(rewrite_not(Not(bound)), data).to_pylist()
    assert complement == [not v for v in eager], "complement must be exact"
    return eager


T, F = True, False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i < 3", [T, F, F, F, F, F]),
        ("i <= 3", [T, F, T, F, F, F]),
        ("i > 3", [F, F, F, F, T, T]),
        ("i >= 3", [F, F, T, F, T, T]),
        ("i = 3", [F, F, T, F, F, F]),
        ("i != 3", [T, T, F, T, T, T]),  # null != 3 is true
        ("i in (1, 5)", [T, F, F, F, T, F]),
        ("i not in (1, 5)", [F, T, T, T, F, T]),
        ("i is null", [F, T, F, T, F, F]),
        ("i is not null", [T, F, T, F, T, T]),
        ("i is nan", [F] * 6),
        ("i is not nan", [T] * 6),
        ("name like 'ab%'", [T, F, T, F, F, T]),
        ("name not like 'ab%'", [F, T, F, T, T, F]),
        ("name like '%'", [T, F, T, T, T, T]),
        ("name not like '%'", [F, T, F, F, F, F]),
        ("name = ''", [F, F, F, F, T, F]),
        ("name < 'b'", [T, F, T, F, T, T]),
        ("x < 1", [F, F, F, T, T, F]),  # NaN and null are false
        ("x >= 1", [T, F, F, F, F, T]),
        ("x = 0", [F, F, F, T, T, F]),  # -0.0 = 0.0
        ("x in (0, 2.5)", [F, F, F, T, T, T]),
        ("x not in (0, 2.5)", [T, T, T, F, F, F]),
        ("x != 1", [F, T, T, T, T, T]),  # NaN != 1 and null != 1
        ("x is nan", [F, T, F, F, F, F]),
        ("x is not nan", [T, F, T, T, T, T]),
        ("x is null", [F, F, T, F, F, F]),
        ("f > 1.4", [T, F, F, F, T, F]),
        ("f = 1.5", [T, F, F, F, F, F]),
        ("price >= 1.5", [T, F, T, F, F, T]),
        ("price in (1.5, 3.33)", [T, F, F, F, F, T]),
        ("price < 1.005", [F, F, F, T, F, F]),
        ("d >= '2024-01-02'", [T, F, F, F, F, T]),
        ("d < '1970-01-01'", [F, F, F, T, F, F]),
        ("tstz < '1970-01-01T00:00:00+00:00'", [F, F, T, F, F, T]),
        ("tstz >= '1970-01-01T01:00:00+01:00'", [T, F, F, T, T, F]),
        ("tsns > '1970-01-01T00:00:00.000000001'", [F, F, F, F, T, T]),
        ("tsns in ('1970-01-01T00:00:00', '1970-01-01T00:00:00.000000005')", [T, F, F, F, F, T]),
        ("u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'", [T, F, F, T, F, F]),
        ("u > '00000000-0000-0000-0000-000000000001'", [T, F, F, T, F, F]),
        ("u not in ('00000000-0000-0000-0000-000000000001')", [T, T, F, T, F, T]),
        ("flag = true", [T, F, F, T, F, F]),
        ("flag != true", [F, T, T, F, T, T]),
        ("addr.city = 'Bonn'", [F, F, T, F, F, T]),
        ("addr.city != 'Bonn'", [T, T, F, T, T, F]),  # null parent -> null city
        ("addr.city is null", [F, T, F, F, T, F]),
        ("addr.zip > 2", [F, F, F, T, F, T]),
        ("not (i < 3)", [F, T, T, T, T, T]),
        ("i < 3 or name like 'b%'", [T, F, F, T, F, F]),
        ("i > 2 and x is not nan", [F, F, T, F, T, T]),
        ("true", [T] * 6),
        ("false", [F] * 6),
    ],
)
def test_semantics(text: str, expected: list[bool]) -> None:
    assert mask(text) == expected


def test_record_batches_and_chunked_tables() -> None:
    batch = TABLE.to_batches()[0]
    assert mask("i >= 3", batch) == [F, F, T, F, T, T]
    chunked = pa.concat_tables([TABLE.slice(0, 2), TABLE.slice(2)])
    assert mask("i >= 3", chunked) == [F, F, T, F, T, T]
    assert filter_data(bind(SCHEMA, parse("i >= 5")), batch).column("id").to_pylist() == [5, 6]


def test_constant_masks_have_the_data_length() -> None:
    assert evaluate(AlwaysTrue(), TABLE).to_pylist() == [T] * 6
    assert evaluate(AlwaysFalse(), TABLE.slice(0, 2)).to_pylist() == [F, F]
    assert TABLE.filter(to_arrow_expression(AlwaysFalse())).num_rows == 0


def test_literals_adapt_to_physical_column_types() -> None:
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "name": pa.array(["ab", None, "b"], pa.large_string()),
            "tstz": pa.array([0, 5_000, None], pa.timestamp("ns", tz="+00:00")),
            "u": pa.array([U1.bytes, U2.bytes, None], pa.uuid()),
            "i": pa.array([1, 2, None], pa.int64()),  # promoted int -> long on disk
        }
    )
    assert mask("name like 'a%'", data) == [T, F, F]
    assert mask("name in ('b', 'c')", data) == [F, F, T]
    assert evaluate(bind(SCHEMA, parse("tstz > '1970-01-01T00:00:00.000001'")), data).to_pylist() == [F, T, F]
    bound = bind(SCHEMA, parse("u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'"))
    assert evaluate(bound, data).to_pylist() == [T, F, F]
    bound = bind(
        SCHEMA, parse("u in ('f79c3e09-677c-4bbd-a479-3f349cb785e7', '00000000-0000-0000-0000-000000000001')")
    )
    assert evaluate(bound, data).to_pylist() == [T, T, F]
    assert mask("i in (2, 3)", data) == [F, T, F]


def test_expressions_compare_uuid_extension_columns_by_storage() -> None:
    # Arrow has no comparison kernels for arrow.uuid: the expression compares the storage,
    # and gives the same rows on plain fixed[16] columns (as other writers store uuids).
    for column in (
        pa.array([U1.bytes, U2.bytes, None], pa.uuid()),
        pa.array([U1.bytes, U2.bytes, None], pa.binary(16)),
    ):
        data = pa.table({"u": column})
        for text, expected in (
            ("u = '00000000-0000-0000-0000-000000000001'", [U2]),
            ("u != '00000000-0000-0000-0000-000000000001'", [U1, None]),
            ("u in ('f79c3e09-677c-4bbd-a479-3f349cb785e7')", [U1]),
            ("u > '00000000-0000-0000-0000-000000000001'", [U1]),
        ):
            got = data.filter(to_arrow_expression(bind(SCHEMA, parse(text))))["u"].to_pylist()
            assert [
                None if g is None else uuid.UUID(bytes=bytes(g)) if isinstance(g, bytes) else g for g in got
            ] == expected, text


def test_missing_column_is_reported() -> None:
    with pytest.raises(ValidationError, match="'d' is not in the data"):
        evaluate(bind(SCHEMA, parse("d = '2024-01-01'")), TABLE.select(["id"]))
    with pytest.raises(ValidationError, match=r"addr\.nope"):
        from firn.expressions import bind_reference
        from firn.expressions.predicates import BoundUnaryPredicate, Operation
        from firn.expressions.terms import BoundReference

        ref = bind_reference(SCHEMA, "addr.zip")
        fake = BoundReference(ref.field, ("addr", "nope"), False)
        evaluate(BoundUnaryPredicate(Operation.IS_NULL, fake), TABLE)


def test_expression_uses_nested_field_refs() -> None:
    expr = to_arrow_expression(bind(SCHEMA, parse("addr.city = 'Bonn'")))
    assert isinstance(expr, pc.Expression)
    assert "city" in str(expr) and "addr" in str(expr)
    assert "coalesce" in str(expr)
