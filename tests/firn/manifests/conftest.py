"""Shared fixtures for the manifest tests: a table schema, a partition spec over many result
types, an in-memory FileIO, and fresh caches per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from firn.io.memory import InMemoryFileIO
from firn.manifests import cache
from firn.spec.partitioning import PartitionSpec, build_partition_spec
from firn.spec.schema import Schema
from firn.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
)


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    cache.configure_caches(
        enabled=True,
        manifest_list_entries=cache.DEFAULT_MANIFEST_LIST_CACHE_ENTRIES,
        manifest_entries=cache.DEFAULT_MANIFEST_CACHE_ENTRIES,
    )
    cache.clear_caches()
    yield
    cache.clear_caches()


@pytest.fixture
def fio() -> InMemoryFileIO:
    return InMemoryFileIO()


@pytest.fixture
def schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, True),
        NestedField(2, "ts", TIMESTAMPTZ),
        NestedField(3, "amount", DecimalType(9, 2)),
        NestedField(4, "uid", UUID),
        NestedField(5, "score", DOUBLE),
        NestedField(6, "region", STRING),
        NestedField(7, "day", DATE),
        NestedField(8, "ratio", FLOAT),
        NestedField(9, "blob", BINARY),
        NestedField(10, "code", FixedType(3)),
        schema_id=3,
    )


@pytest.fixture
def spec(schema: Schema) -> PartitionSpec:
    """A spec whose partition tuple has date, decimal, uuid, double, int, string and fixed values."""
    return build_partition_spec(
        schema,
        [
            ("ts", "day"),
            ("amount", "identity"),
            ("uid", "identity"),
            ("score", "identity"),
            ("id", "bucket[4]"),
            ("region", "identity"),
            ("code", "identity"),
            ("ts", "hour"),
        ],
        spec_id=2,
    )


@pytest.fixture
def unpartitioned() -> PartitionSpec:
    return PartitionSpec(0, ())
