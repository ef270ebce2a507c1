"""split_location's str fast path agrees with urllib's split on every form of location."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from firn.maintenance.remove_orphan_files import _Matcher, split_location


def _by_urlsplit(location: str) -> tuple[str, str, str]:
    parts = urlsplit(location)
    if len(parts.scheme) > 1:
        scheme, authority, path = parts.scheme, parts.netloc, parts.path
    else:
        scheme, authority, path = "", "", location
    while "//" in path:
        path = path.replace("//", "/")
    if len(path) > 1:
        path = path.rstrip("/")
    return scheme, authority, path


@pytest.mark.parametrize(
    "location",
    [
        "s3://b/a/x.parquet",
        "s3a://b/a//x",
        "file:///tmp/x",
        "file:/tmp/x",
        "/tmp/x",
        "C:/x",
        "s3://b",
        "s3://b/",
        "hdfs://nn:8020/a/b/",
        "s3://user@b/x",
        "S3://b/x",
        "s3://b/x?y",
        "gs://b/x#f",
        "abfss://c@acct.dfs.core.windows.net/p/q",
        "s3://[::1]/x",
        "s3://b/a b/ü.parquet",
        "1s://b/x",
        "s3:///x",
        "s3://b/x/",
        " s3://b/x",
        "s3://b/x\ty",
        "s3://b/x\nz",
    ],
)
def test_split_location_agrees_with_urlsplit(location: str) -> None:
    assert split_location(location) == _by_urlsplit(location)


def test_matcher_shares_forms_and_keeps_every_pair() -> None:
    m = _Matcher({"s3n,s3a": "s3"}, {})
    m.add_all(
        ["s3://b/t/a.parquet", "s3a://b/t/b.parquet", "s3://c/t/a.parquet", "/t/a.parquet", "s3://b/t/c"]
    )
    assert m.known["/t/a.parquet"] == (("", ""), ("s3", "b"), ("s3", "c"))
    assert m.known["/t/b.parquet"] is m.known["/t/c"]  # one tuple per form, shared
    assert m.match("s3a://b/t/b.parquet", "ERROR") == (False, None)
    assert m.match("s3://b/t/zzz.parquet", "ERROR") == (True, None)
    orphan, conflict = m.match("gs://x/t/b.parquet", "ERROR")
    assert not orphan and conflict is not None
