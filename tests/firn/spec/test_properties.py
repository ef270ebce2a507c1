"""Typed table properties: one declaration per attribute (key, default, parser), parsed once."""

from __future__ import annotations

from dataclasses import fields

import pytest

from firn.errors import ValidationError
from firn.spec import properties as P
from firn.spec.properties import IsolationLevel, RowLevelMode, TableProperties


def test_defaults_follow_iceberg_java() -> None:
    t = TableProperties.parse({})
    assert t == TableProperties(raw={})
    assert t.commit_num_retries == 4
    assert t.commit_min_retry_wait_ms == 100
    assert t.commit_total_retry_time_ms == 30 * 60 * 1000
    assert t.write_target_file_size_bytes == 512 * 1024 * 1024
    assert t.manifest_merge_enabled is True
    assert t.parquet_compression == "zstd"
    assert t.parquet_compression_level is None
    assert t.metrics_mode_default == "truncate(16)"
    assert t.delete_mode is RowLevelMode.COPY_ON_WRITE
    assert t.merge_isolation_level is IsolationLevel.SERIALIZABLE
    assert t.max_ref_age_ms is None
    assert (t.root_max_data_files, t.root_max_delete_vectors, t.root_writer_flush_factor) == (200, 200, 2)


def test_every_typed_attribute_has_a_key_constant_and_a_parser() -> None:
    declared = {f.name: f for f in fields(TableProperties) if f.name != "raw"}
    keys = {f.metadata["firn.property-key"] for f in declared.values()}
    assert len(keys) == len(declared), "two attributes read the same property"
    exported = {getattr(P, name) for name in P.__all__ if name.isupper()}
    assert keys <= exported


@pytest.mark.parametrize(
    ("props", "attribute", "expected"),
    [
        ({P.COMMIT_NUM_RETRIES: " 7 "}, "commit_num_retries", 7),
        ({P.MANIFEST_MERGE_ENABLED: "FALSE"}, "manifest_merge_enabled", False),
        ({P.PARQUET_COMPRESSION: "Snappy"}, "parquet_compression", "snappy"),
        ({P.PARQUET_COMPRESSION_LEVEL: "3"}, "parquet_compression_level", 3),
        ({P.METADATA_COMPRESSION: "GZIP"}, "metadata_compression", "gzip"),
        ({P.DELETE_MODE: "merge-on-read"}, "delete_mode", RowLevelMode.MERGE_ON_READ),
        ({P.UPDATE_ISOLATION_LEVEL: "snapshot"}, "update_isolation_level", IsolationLevel.SNAPSHOT),
        ({P.MAX_REF_AGE_MS: "0"}, "max_ref_age_ms", 0),
        ({P.METRICS_MODE_DEFAULT: "full"}, "metrics_mode_default", "full"),
        ({P.LEAF_TARGET_ENTRIES: "10"}, "leaf_target_entries", 10),
    ],
)
def test_values_are_parsed_to_their_types(props: dict[str, str], attribute: str, expected: object) -> None:
    t = TableProperties.parse(props)
    assert getattr(t, attribute) == expected
    assert t.raw == props


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({P.COMMIT_NUM_RETRIES: "many"}, "'commit.retry.num-retries' must be an integer"),
        ({P.COMMIT_NUM_RETRIES: "-1"}, "'commit.retry.num-retries' must be >= 0"),
        ({P.ROOT_MAX_BYTES: "10"}, "'commit.root.max-bytes' must be >= 1024"),
        ({P.GC_ENABLED: "maybe"}, "'gc.enabled' must be true or false"),
        ({P.PARQUET_COMPRESSION: "lzo"}, "'write.parquet.compression-codec': unknown codec 'lzo'"),
        ({P.METADATA_COMPRESSION: "zstd"}, "must be none or gzip"),
        ({P.MERGE_MODE: "fast"}, "'write.merge.mode' must be one of copy-on-write, merge-on-read"),
    ],
)
def test_bad_values_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TableProperties.parse(props)


def test_unknown_keys_stay_in_raw_and_column_metrics_modes_read_them() -> None:
    t = TableProperties.parse({"custom.key": "x", P.METRICS_MODE_COLUMN_PREFIX + "id": "full"})
    assert t.raw["custom.key"] == "x"
    assert t.metrics_mode_for("id") == "full"
    assert t.metrics_mode_for("other") == "truncate(16)"
