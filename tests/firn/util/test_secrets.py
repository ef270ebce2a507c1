"""firn.util.secrets: the one masking function, and the objects whose repr() it guards."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from firn.util.secrets import (
    MASK,
    encoded_forms,
    is_secret_key,
    mask_secrets,
    masked_properties,
    masked_repr,
)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # URI user-info, plain, percent-encoded, and unencoded '@' / '/' in the password.
        (
            "cannot open catalog postgresql://u:SECRETPW9@db.example:5432/firn: refused",
            "cannot open catalog postgresql://u:***@db.example:5432/firn: refused",
        ),
        ("postgresql://u:p%40ss%2Fw%3Ard@host/db", "postgresql://u:***@host/db"),
        (
            "postgresql+psycopg://u:p@ss/w:rd@host/db?sslmode=x",
            "postgresql+psycopg://u:***@host/db?sslmode=x",
        ),
        ("rest+https://client:s3cr3t@catalog.example/api", "rest+https://client:***@catalog.example/api"),
        # password=-style query parameters and key=value pairs.
        (
            "postgresql://host/db?user=u&password=pw1&sslmode=x",
            "postgresql://host/db?user=u&password=***&sslmode=x",
        ),
        ("postgresql://host/db?sslpassword=pw2", "postgresql://host/db?sslpassword=***"),
        ("host=h password=pw3 dbname=d", "host=h password=*** dbname=d"),
        (
            "-p s3.secret-access-key=AKS3CR3T -p s3.endpoint=http://m",
            "-p s3.secret-access-key=*** -p s3.endpoint=http://m",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=abc123&X-Amz-Date=1",
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=***&X-Amz-Date=1",
        ),
        # A dict's repr and JSON: secret keys by name.
        (
            "{'s3.secret-access-key': 'sk', 's3.session-token': \"it's\", 's3.access-key-id': 'AKID'}",
            "{'s3.secret-access-key': '***', 's3.session-token': \"***\", 's3.access-key-id': 'AKID'}",
        ),
        (
            '{"token": "t0k", "credential": "id:sec", "uri": "http://x"}',
            '{"token": "***", "credential": "***", "uri": "http://x"}',
        ),
        # Nothing secret: unchanged.
        (
            "s3://bucket/warehouse/db/t/data/00000-1.parquet",
            "s3://bucket/warehouse/db/t/data/00000-1.parquet",
        ),
        ("rest+http://127.0.0.1:8181/v1/namespaces", "rest+http://127.0.0.1:8181/v1/namespaces"),
        ("http://user@host/x", "http://user@host/x"),
        ("table 'db.t' has 3 snapshots", "table 'db.t' has 3 snapshots"),
    ],
)
def test_mask_secrets(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked


def test_known_secrets_in_every_encoded_form() -> None:
    secret = "p@ss w:rd/%"
    forms = encoded_forms(secret)
    assert {"p@ss w:rd/%", "p%40ss%20w%3Ard%2F%25", "p%40ss+w%3Ard%2F%25", "p%40ss w%3Ard%2F%"} <= set(forms)
    text = " | ".join(forms)
    assert mask_secrets(text, [secret]) == " | ".join([MASK] * len(forms))
    # Too short to replace inside free text (it would garble every message), but still
    # masked where the structure says it is a password.
    assert (
        mask_secrets("abc in a message, postgresql://u:abc@h/d", ["abc"])
        == "abc in a message, postgresql://u:***@h/d"
    )


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("s3.secret-access-key", True),
        ("s3.session-token", True),
        ("token", True),
        ("credential", True),
        ("gcs.oauth2.token", True),
        ("adls.sas-token.account", True),
        ("adls.account-key", True),
        ("header.Authorization", True),
        ("client_secret", True),
        ("db.password", True),
        ("S3.SECRET_ACCESS_KEY", True),
        ("s3.access-key-id", False),
        ("s3.endpoint", False),
        ("warehouse", False),
        ("io.delete-threads", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_masked_properties() -> None:
    props = {
        "s3.secret-access-key": "sk",
        "uri": "postgresql://u:pw@h/db",
        "warehouse": "s3://b/w",
        "token": "",
    }
    assert masked_properties(props) == {
        "s3.secret-access-key": MASK,
        "uri": "postgresql://u:***@h/db",
        "warehouse": "s3://b/w",
        "token": "",  # an empty value hides nothing
    }
    assert props["s3.secret-access-key"] == "sk"  # a copy: the input is untouched


@dataclass(frozen=True)
class _Inner:
    __repr__ = masked_repr

    io_properties: dict[str, str]


@dataclass(frozen=True)
class _Outer:
    __repr__ = masked_repr

    uri: str
    inner: _Inner
    hidden: str = field(default="not shown", repr=False)


def test_masked_repr_of_nested_dataclasses() -> None:
    obj = _Outer("postgresql://u:pw-1@h/db", _Inner({"s3.secret-access-key": "sk-2", "s3.region": "eu"}))
    text = repr(obj)
    assert "pw-1" not in text and "sk-2" not in text and "not shown" not in text
    assert text == (
        "_Outer(uri='postgresql://u:***@h/db', "
        "inner=_Inner(io_properties={'s3.secret-access-key': '***', 's3.region': 'eu'}))"
    )
    assert masked_repr("postgresql://u:pw@h") == "'postgresql://u:***@h'"  # not a dataclass: its repr, masked
