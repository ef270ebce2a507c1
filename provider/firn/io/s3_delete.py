"""Batch deletes on S3: ``DeleteObjects``, up to 1,000 keys per request, partial failures reported.

pyarrow deletes one key per request, after a ``HEAD`` of it, and then writes an empty marker
object for the "directory" the key was in (three requests per file, and a marker left behind).
S3's ``DeleteObjects`` deletes up to 1,000 keys in one ``POST /<bucket>?delete`` and answers
``200`` with an ``<Error>`` entry for each key it could not delete (``AccessDenied``,
``SlowDown``, ``InternalError``, ...). :class:`S3BatchDeleter` sends those requests itself
(pyarrow has no call for them), signed with AWS Signature Version 4, and

* retries a whole request that failed transiently (a connection error or timeout, ``5xx`` or
  ``429``) and the keys that failed with a transient per-key code, with the FileIO's
  :class:`~firn.io.s3.RetryPolicy` (``s3.retry.*``);
* returns, never raises, the keys still not deleted with S3's code and message, so the caller
  (:func:`firn.io.deletion.delete_confined`) reports them; orphan removal finds them later.

Deleting a key that does not exist succeeds (S3 reports it deleted), so a retried batch is
harmless. Batch deletes need credentials Firn can sign with: the ``s3.access-key-id`` /
``s3.secret-access-key`` (/ ``s3.session-token``) properties or the ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) variables. With other credentials (an
assumed role, a profile file, instance metadata), anonymous access or an ``s3.proxy-uri``,
:meth:`S3BatchDeleter.for_bucket` returns None and the FileIO deletes key by key through
pyarrow, which handles those.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import http.client
import logging
import os
import ssl
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote
from xml.sax.saxutils import escape

from firn.io.s3 import S3Settings

logger = logging.getLogger(__name__)

SERVICE = "s3"
ALGORITHM = "AWS4-HMAC-SHA256"
# Per-key codes S3 (and S3-compatible stores) use for failures that may pass on another try.
TRANSIENT_KEY_CODES = frozenset(
    {"InternalError", "SlowDown", "ServiceUnavailable", "RequestTimeout", "Throttling", "OperationAborted"}
)
_NS = "http://s3.amazonaws.com/doc/2006-03-01/"


@dataclass(frozen=True, slots=True)
class Credentials:
    """Static AWS credentials (never printed)."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def __repr__(self) -> str:
        return f"Credentials(access_key_id={self.access_key_id!r}, secret_access_key='***')"

    @staticmethod
    def resolve(settings: S3Settings, environ: Mapping[str, str] | None = None) -> Credentials | None:
        """From the properties, else the standard environment variables; None otherwise."""
        if settings.access_key_id and settings.secret_access_key:
            return Credentials(settings.access_key_id, settings.secret_access_key, settings.session_token)
        if settings.access_key_id or settings.role_arn or settings.anonymous:
            return None  # incomplete properties or another mechanism: leave it to the SDK
        env = os.environ if environ is None else environ
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if key and secret:
            return Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None)
        return None


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign_v4(
    method: str,
    host: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    payload: bytes,
    credentials: Credentials,
    region: str,
    now: dt.datetime,
) -> dict[str, str]:
    """The headers of a request signed with AWS Signature Version 4: ``headers`` plus
    ``host``, ``x-amz-date``, ``x-amz-content-sha256``, ``x-amz-security-token`` (with a
    session token) and ``Authorization``. Every given header is signed."""
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(payload).hexdigest()
    out = {k.lower(): v.strip() for k, v in headers.items()}
    out.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash})
    if credentials.session_token:
        out["x-amz-security-token"] = credentials.session_token
    signed = sorted(out)
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items())
    )
    canonical = "\n".join(
        [
            method,
            quote(path, safe="/-_.~"),
            canonical_query,
            "".join(f"{k}:{out[k]}\n" for k in signed),
            ";".join(signed),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(
        _hmac(_hmac(_hmac(f"AWS4{credentials.secret_access_key}".encode(), day), region), SERVICE),
        "aws4_request",
    )
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(signed)}, Signature={signature}"
    )
    return out


def delete_request_body(keys: Sequence[str]) -> bytes:
    """A quiet ``DeleteObjects`` body: only failures are reported back."""
    objects = "".join(f"<Object><Key>{escape(k)}</Key></Object>" for k in keys)
    return f'<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="{_NS}"><Quiet>true</Quiet>{objects}</Delete>'.encode()


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_delete_errors(body: bytes) -> dict[str, tuple[str, str]]:
    """Per-key ``<Error>`` entries of a ``DeleteObjects`` answer: key -> (code, message)."""
    root = ET.fromstring(body)
    out: dict[str, tuple[str, str]] = {}
    for node in root:
        if _local(node.tag) != "Error":
            continue
        fields = {_local(child.tag): child.text or "" for child in node}
        out[fields.get("Key", "")] = (fields.get("Code", "Unknown"), fields.get("Message", ""))
    return out


def _error_code(body: bytes) -> tuple[str, str]:
    """(code, message) of an S3 error answer, or what can be said of it."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return "Unknown", body[:200].decode(errors="replace")
    fields = {_local(child.tag): child.text or "" for child in root}
    return fields.get("Code", "Unknown"), fields.get("Message", "")


class _RequestFailed(Exception):
    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class S3BatchDeleter:
    """``DeleteObjects`` for one bucket (see the module docstring). Thread-safe: every
    request opens its own connection."""

    def __init__(self, settings: S3Settings, bucket: str, region: str, credentials: Credentials) -> None:
        self.settings = settings
        self.bucket = bucket
        self.region = region
        self._credentials = credentials
        if settings.endpoint_host:
            self.scheme = settings.endpoint_scheme or "https"
            virtual = settings.path_style is False
            self.host = f"{bucket}.{settings.endpoint_host}" if virtual else settings.endpoint_host
        else:  # AWS itself; a dotted bucket name would not match the wildcard certificate
            self.scheme = "https"
            regional = f"s3.{region}.amazonaws.com"
            virtual = "." not in bucket and settings.path_style is not True
            self.host = f"{bucket}.{regional}" if virtual else regional
        self.path = "/" if virtual else f"/{bucket}"

    def __repr__(self) -> str:
        return (
            f"S3BatchDeleter({self.scheme}://{self.host}{self.path}, batch={self.settings.delete_batch_size})"
        )

    @staticmethod
    def for_bucket(
        settings: S3Settings, bucket: str, region: str | None, environ: Mapping[str, str] | None = None
    ) -> S3BatchDeleter | None:
        """A deleter for ``bucket``, or None when Firn cannot sign and send the requests
        the way pyarrow would (see the module docstring)."""
        if settings.proxy_uri:
            return None
        credentials = Credentials.resolve(settings, environ)
        if credentials is None:
            return None
        return S3BatchDeleter(settings, bucket, region or "us-east-1", credentials)

    def delete(self, keys: Sequence[str]) -> dict[str, str]:
        """Delete ``keys`` in batches of ``s3.delete.batch-size``; the keys not deleted,
        with why (S3's code and message, or the request's error)."""
        failed: dict[str, str] = {}
        size = self.settings.delete_batch_size
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), size):
            failed.update(self._delete_batch(unique[start : start + size]))
        return failed

    def _delete_batch(self, keys: list[str]) -> dict[str, str]:
        policy = self.settings.retry
        pending = keys
        final: dict[str, str] = {}
        for attempt in range(policy.retries + 1):
            last = attempt >= policy.retries
            try:
                errors = self._send(pending)
            except _RequestFailed as e:
                if last or not e.transient:
                    final.update({k: str(e) for k in pending})
                    return final
                self._wait(attempt, f"{len(pending)} keys: {e}")
                continue
            retry: list[str] = []
            for key, (code, message) in errors.items():
                if code in TRANSIENT_KEY_CODES and not last:
                    retry.append(key)
                else:
                    final[key] = f"{code}: {message}" if message else code
            if not retry:
                return final
            pending = retry
            self._wait(attempt, f"{len(retry)} keys failed ({errors[retry[0]][0]})")
        return final  # pragma: no cover - the last attempt returns above

    def _wait(self, attempt: int, why: str) -> None:
        delay = self.settings.retry.delay(attempt)
        logger.info("batch delete in s3://%s: %s; retrying in %.2f s", self.bucket, why, delay)
        self.settings.retry.sleep(delay)

    def _send(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        body = delete_request_body(keys)
        headers = sign_v4(
            "POST",
            self.host,
            self.path,
            {"delete": ""},
            {
                "content-md5": base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode(),
                "content-type": "application/xml",
                "content-length": str(len(body)),
            },
            body,
            self._credentials,
            self.region,
            dt.datetime.now(dt.UTC),
        )
        conn = self._connection()
        try:
            try:
                conn.connect()
                if conn.sock is not None:
                    conn.sock.settimeout(self.settings.request_timeout_s)
                conn.request("POST", f"{self.path}?delete", body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                raise _RequestFailed(
                    f"DeleteObjects request failed: {type(e).__name__}: {e}", transient=True
                ) from e
        finally:
            conn.close()
        if resp.status != 200:
            code, message = _error_code(data)
            raise _RequestFailed(
                f"DeleteObjects answered HTTP {resp.status} {code}: {message}",
                transient=resp.status >= 500 or resp.status == 429 or code in TRANSIENT_KEY_CODES,
            )
        try:
            return parse_delete_errors(data)
        except ET.ParseError as e:  # a 200 cut short: which keys went is unknown, so try again
            raise _RequestFailed(f"DeleteObjects answer is not XML: {e}", transient=True) from e

    def _connection(self) -> http.client.HTTPConnection:
        host, _, port = self.host.rpartition(":") if ":" in self.host else (self.host, "", "")
        number = int(port) if port else None
        timeout = self.settings.connect_timeout_s
        if self.scheme == "https":
            return http.client.HTTPSConnection(
                host, number, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(host, number, timeout=timeout)


__all__ = [
    "Credentials",
    "S3BatchDeleter",
    "TRANSIENT_KEY_CODES",
    "delete_request_body",
    "parse_delete_errors",
    "sign_v4",
]
