"""Typed view properties: defaults (Iceberg Java's ViewProperties) and refused values."""

from __future__ import annotations

import pytest

from firn.errors import ValidationError
from firn.spec.view_properties import (
    COMMENT,
    METADATA_COMPRESSION,
    REPLACE_DROP_DIALECT_ALLOWED,
    VERSION_HISTORY_SIZE,
    WRITE_METADATA_PATH,
    ViewProperties,
)


def test_defaults() -> None:
    p = ViewProperties.parse({})
    assert p.version_history_size == 10
    assert p.replace_drop_dialect_allowed is False
    assert p.metadata_compression == "gzip"
    assert p.write_metadata_path is None
    assert p.comment is None
    assert p.commit_num_retries == 4


def test_parsed_values() -> None:
    p = ViewProperties.parse(
        {
            VERSION_HISTORY_SIZE: " 3 ",
            REPLACE_DROP_DIALECT_ALLOWED: "TRUE",
            METADATA_COMPRESSION: "None",
            WRITE_METADATA_PATH: "s3://b/meta/",
            COMMENT: "daily",
            "other": "kept",
        }
    )
    assert (p.version_history_size, p.replace_drop_dialect_allowed, p.metadata_compression) == (
        3,
        True,
        "none",
    )
    assert p.write_metadata_path == "s3://b/meta"
    assert p.comment == "daily"
    assert p.raw["other"] == "kept"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({VERSION_HISTORY_SIZE: "0"}, "must be >= 1"),
        ({VERSION_HISTORY_SIZE: "ten"}, "must be an integer"),
        ({REPLACE_DROP_DIALECT_ALLOWED: "yes"}, "must be true or false"),
        ({METADATA_COMPRESSION: "zstd"}, "must be none or gzip"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        ViewProperties.parse(props)
    assert next(iter(props)) in str(info.value)
