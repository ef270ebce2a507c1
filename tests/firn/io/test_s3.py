"""firn.io.s3 (settings, retries) and firn.io.s3_delete (SigV4, DeleteObjects) as units.

The requests themselves are tested against a real S3 API server in tests/firn/s3/.
"""

from __future__ import annotations

import datetime as dt

import pytest

from firn.errors import ValidationError
from firn.io.s3 import RetryPolicy, S3Settings, is_transient
from firn.io.s3_delete import Credentials, S3BatchDeleter, delete_request_body, parse_delete_errors, sign_v4

NOW = dt.datetime(2026, 5, 17, 12, 30, 45, tzinfo=dt.UTC)


@pytest.mark.parametrize("session_token", [None, "session-tok"])
def test_signature_v4_matches_botocore(monkeypatch: pytest.MonkeyPatch, session_token: str | None) -> None:
    """Firn's signer and botocore's S3 signer agree byte for byte on a DeleteObjects request."""
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    body = delete_request_body(["wh/t/data/a b.parquet", "wh/t/data/<&>.parquet"])
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", session_token)
    signed = sign_v4(
        "POST",
        "127.0.0.1:9000",
        "/my-bucket",
        {"delete": ""},
        {"content-md5": "abc==", "content-type": "application/xml"},
        body,
        creds,
        "eu-west-1",
        NOW,
    )
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: NOW.replace(tzinfo=None))
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:9000/my-bucket?delete",
        data=body,
        headers={k: v for k, v in signed.items() if k not in ("authorization", "x-amz-date", "host")},
    )
    botocore.auth.S3SigV4Auth(
        BotoCredentials(creds.access_key_id, creds.secret_access_key, session_token), "s3", "eu-west-1"
    ).add_auth(request)
    assert signed["authorization"] == request.headers["Authorization"]
    assert signed["x-amz-date"] == "20260517T123045Z"
    assert ("x-amz-security-token" in signed) == (session_token is not None)


def test_delete_bodies_escape_keys_and_errors_parse_per_key() -> None:
    body = delete_request_body(["a&b", "c<d>"]).decode()
    assert "<Quiet>true</Quiet>" in body
    assert "<Key>a&amp;b</Key>" in body and "<Key>c&lt;d&gt;</Key>" in body
    answer = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<Deleted><Key>ok</Key></Deleted>"
        b"<Error><Key>a&amp;b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        b"<Error><Key>slow</Key><Code>SlowDown</Code><Message>Reduce</Message></Error>"
        b"</DeleteResult>"
    )
    assert parse_delete_errors(answer) == {
        "a&b": ("AccessDenied", "Access Denied"),
        "slow": ("SlowDown", "Reduce"),
    }


def test_settings_defaults_and_validation() -> None:
    s = S3Settings.from_properties({}, environ={})
    assert (s.connect_timeout_s, s.request_timeout_s) == (1.0, 3.0)
    assert (s.retry.retries, s.retry.min_wait_s, s.retry.max_wait_s) == (5, 2.0, 20.0)
    assert s.delete_batch_size == 250
    for props, needle in (
        ({"s3.delete.batch-size": "1001"}, "at most 1000"),
        ({"s3.delete.batch-size": "0"}, "s3.delete.batch-size must be >= 1"),
        ({"s3.retry.num-retries": "many"}, "s3.retry.num-retries must be an integer"),
        ({"s3.retry.num-retries": "-1"}, "must be >= 0"),
        ({"s3.request-timeout": "0"}, "s3.request-timeout must be >= 0.001"),
        ({"s3.retry.min-wait-ms": "500", "s3.retry.max-wait-ms": "100"}, "is below s3.retry.min-wait-ms"),
        ({"s3.path-style-access": "sometimes"}, "expected a boolean"),
    ):
        with pytest.raises(ValidationError, match=needle):
            S3Settings.from_properties(props, environ={})
    secret = S3Settings.from_properties({"s3.access-key-id": "AK", "s3.secret-access-key": "TOPSECRET"})
    assert "TOPSECRET" not in repr(secret)


def test_retry_policy_is_bounded_backs_off_and_skips_permanent_errors() -> None:
    waits: list[float] = []
    policy = RetryPolicy(retries=3, min_wait_s=0.1, max_wait_s=0.3, sleep=waits.append)
    for retry in range(6):  # between half and all of min(max, min * 2**n)
        cap = min(0.3, 0.1 * 2**retry)
        assert cap / 2 <= policy.delay(retry) <= cap
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OSError("AWS Error SLOW_DOWN during GetObject operation: HTTP status 503")
        return "ok"

    assert policy.call("read x", flaky, is_transient) == "ok" and len(calls) == 3 and len(waits) == 2

    def always() -> str:
        calls.append(1)
        raise OSError("AWS Error NETWORK_CONNECTION: curlCode: 28, Timeout was reached")

    calls.clear()
    with pytest.raises(OSError, match="Timeout"):
        policy.call("read x", always, is_transient)
    assert len(calls) == 4  # the first try and 3 retries
    calls.clear()

    def denied() -> str:
        calls.append(1)
        raise OSError("AWS Error ACCESS_DENIED during GetObject operation: HTTP status 403")

    with pytest.raises(OSError, match="ACCESS_DENIED"):
        policy.call("read x", denied, is_transient)
    assert len(calls) == 1
    assert not is_transient(FileNotFoundError("gone")) and not is_transient(ValueError("bug"))


def test_batch_deletes_need_credentials_firn_can_sign_with() -> None:
    keys = {"s3.access-key-id": "AK", "s3.secret-access-key": "SK"}
    settings = S3Settings.from_properties(keys, environ={})
    assert S3BatchDeleter.for_bucket(settings, "b", "us-east-1", environ={}) is not None
    env = {"AWS_ACCESS_KEY_ID": "EK", "AWS_SECRET_ACCESS_KEY": "ES", "AWS_SESSION_TOKEN": "ET"}
    from_env = Credentials.resolve(S3Settings.from_properties({}, environ={}), env)
    assert from_env == Credentials("EK", "ES", "ET") and "ES" not in repr(from_env)
    # An assumed role, anonymous access or a proxy: pyarrow's own (per-key) deletes.
    for extra in ({"s3.role-arn": "arn:aws:iam::1:role/r"}, {"s3.anonymous": "true"}):
        assert Credentials.resolve(S3Settings.from_properties(extra, environ={}), env) is None
    proxied = S3Settings.from_properties({**keys, "s3.proxy-uri": "http://proxy:3128"}, environ={})
    assert S3BatchDeleter.for_bucket(proxied, "b", "us-east-1", environ={}) is None
    assert (
        S3BatchDeleter.for_bucket(S3Settings.from_properties({}, environ={}), "b", None, environ={}) is None
    )


@pytest.mark.parametrize(
    ("props", "bucket", "url"),
    [
        ({"s3.endpoint": "http://127.0.0.1:9000"}, "b", "http://127.0.0.1:9000/b"),
        ({"s3.endpoint": "http://minio:9000", "s3.path-style-access": "true"}, "b", "http://minio:9000/b"),
        (
            {"s3.endpoint": "https://store.example", "s3.path-style-access": "false"},
            "b",
            "https://b.store.example/",
        ),
        ({}, "b", "https://b.s3.eu-west-1.amazonaws.com/"),
        ({}, "with.dots", "https://s3.eu-west-1.amazonaws.com/with.dots"),
    ],
)
def test_batch_delete_addressing_follows_pyarrow(props: dict[str, str], bucket: str, url: str) -> None:
    settings = S3Settings.from_properties(
        {"s3.access-key-id": "AK", "s3.secret-access-key": "SK", **props}, environ={}
    )
    deleter = S3BatchDeleter.for_bucket(settings, bucket, "eu-west-1")
    assert deleter is not None and f"{deleter.scheme}://{deleter.host}{deleter.path}" == url
