"""Typed field reads shared by every JSON reader in firn.spec: Java's widths, no coercion."""

from __future__ import annotations

from typing import Any

import pytest

from firn.errors import InvalidMetadata
from firn.spec.json_fields import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    get_bool,
    get_int,
    get_list,
    get_long,
    get_object,
    get_str,
    opt_bool,
    opt_int,
    opt_int_list,
    opt_list,
    opt_long,
    opt_long_list,
    opt_str,
)

NOT_AN_INTEGER = [1.5, 1.0, 1e3, True, False, "1", None, [1], {"v": 1}]


@pytest.mark.parametrize("value", NOT_AN_INTEGER, ids=repr)
def test_integers_refuse_floats_bools_strings_and_null(value: object) -> None:
    for read in (get_int, get_long):
        with pytest.raises(InvalidMetadata, match=r"^schema 3: 'schema-id' must be an integer, got ") as info:
            read({"schema-id": value}, "schema-id", "schema 3")
        assert repr(value) in str(info.value)
    if value is not None:
        for opt in (opt_int, opt_long):
            with pytest.raises(InvalidMetadata, match="'schema-id' must be an integer"):
                opt({"schema-id": value}, "schema-id", "schema 3")


@pytest.mark.parametrize(
    ("read", "lo", "hi"),
    [
        (get_int, INT_MIN, INT_MAX),
        (get_long, LONG_MIN, LONG_MAX),
        (opt_int, INT_MIN, INT_MAX),
        (opt_long, LONG_MIN, LONG_MAX),
    ],
)
def test_integers_have_java_widths(read: Any, lo: int, hi: int) -> None:
    assert read({"k": lo}, "k", "x") == lo
    assert read({"k": hi}, "k", "x") == hi
    for outside in (lo - 1, hi + 1):
        with pytest.raises(
            InvalidMetadata, match=rf"^x: 'k' must be an integer in \[{lo}, {hi}\], got {outside}$"
        ):
            read({"k": outside}, "k", "x")


def test_int_and_long_bounds_are_java_int_and_long() -> None:
    assert (INT_MIN, INT_MAX) == (-2147483648, 2147483647)
    assert (LONG_MIN, LONG_MAX) == (-9223372036854775808, 9223372036854775807)


def test_required_fields_must_be_present_and_optional_ones_may_be_absent_or_null() -> None:
    for read in (get_int, get_long, get_bool, get_str, get_list):
        with pytest.raises(InvalidMetadata, match=r"^view version 1 is missing required field 'k'$"):
            read({}, "k", "view version 1")
    for opt in (opt_int, opt_long, opt_bool, opt_str, opt_int_list, opt_long_list):
        assert opt({}, "k", "x") is None
        assert opt({"k": None}, "k", "x") is None
    assert opt_list({}, "k", "x") == [] and opt_list({"k": None}, "k", "x") == []


@pytest.mark.parametrize("not_an_object", [[1, 2], "text", 7, None])
def test_fields_of_something_that_is_not_an_object(not_an_object: Any) -> None:
    with pytest.raises(InvalidMetadata, match=r"^snapshot must be a JSON object, got "):
        get_long(not_an_object, "snapshot-id", "snapshot")
    with pytest.raises(InvalidMetadata, match=r"^snapshot must be a JSON object, got "):
        opt_long(not_an_object, "parent-snapshot-id", "snapshot")
    with pytest.raises(InvalidMetadata, match=r"^summary must be a JSON object, got "):
        get_object(not_an_object, "summary")


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None, 1.0])
def test_booleans_are_only_true_or_false(value: object) -> None:
    with pytest.raises(InvalidMetadata, match=r"'required' must be true or false, got "):
        get_bool({"required": value}, "required", "schema field 'x'")
    if value is not None:
        with pytest.raises(InvalidMetadata, match=r"'contains-nan' must be true or false"):
            opt_bool({"contains-nan": value}, "contains-nan", "summary")
    assert get_bool({"b": False}, "b", "x") is False and opt_bool({"b": True}, "b", "x") is True


@pytest.mark.parametrize("value", [5, 1.5, True, None, ["a"], {"a": "b"}])
def test_strings_are_not_coerced(value: object) -> None:
    with pytest.raises(InvalidMetadata, match=r"'transform' must be a string, got "):
        get_str({"transform": value}, "transform", "partition field 'p'")
    if value is not None:
        with pytest.raises(InvalidMetadata, match=r"'doc' must be a string or null, got "):
            opt_str({"doc": value}, "doc", "schema field 'x'")


def test_lists() -> None:
    assert get_list({"k": [1, "a"]}, "k", "x") == [1, "a"]
    with pytest.raises(InvalidMetadata, match=r"^x: 'k' must be a list, got dict$"):
        get_list({"k": {}}, "k", "x")
    with pytest.raises(InvalidMetadata, match=r"^x: 'k' must be a list, got str$"):
        opt_list({"k": "abc"}, "k", "x")
    assert opt_int_list({"k": [1, 2]}, "k", "x") == (1, 2)
    assert opt_long_list({"k": [2**40]}, "k", "x") == (2**40,)
    for bad in ([1, 1.5], [True], ["1"], [2**31], "12", 3):
        with pytest.raises(InvalidMetadata, match=r"'k' must be a list of integers"):
            opt_int_list({"k": bad}, "k", "x")
    with pytest.raises(InvalidMetadata, match=r"'k' must be a list of integers"):
        opt_long_list({"k": [2**63]}, "k", "x")
