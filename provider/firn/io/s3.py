"""S3 for :class:`~firn.io.pyarrow_io.PyArrowFileIO`: the ``s3.*`` properties, parsed once.

:class:`S3Settings` reads Iceberg's FileIO property names (``s3.endpoint``,
``s3.access-key-id``, ...) with the environment and the AWS default credential chain as
fallbacks, and turns them into ``pyarrow.fs.S3FileSystem`` arguments. Object stores fail in
ways a local disk does not (throttling with ``503 SlowDown``, dropped connections, slow
answers), so every request is bounded and retried:

``s3.connect-timeout`` (seconds, default 1) and ``s3.request-timeout`` (seconds, default 3)
    How long to wait for a connection, and for the next bytes of an answer (the AWS SDK's own
    defaults; pyarrow applies the request timeout as a low-speed limit).
``s3.retry.num-retries`` (default 5)
    Retries after a failed request: the AWS SDK inside pyarrow retries throttling, server
    errors, timeouts and dropped connections up to this many times with its own exponential
    backoff, and Firn retries what pyarrow does not (a whole-object or ranged read, which
    pyarrow reports as ``INTERNAL_FAILURE ... Failed to flush response stream`` after a
    ``503``; a listing; batch deletes).
``s3.retry.min-wait-ms`` / ``s3.retry.max-wait-ms`` (defaults 2000 / 20000)
    The backoff of Firn's own retries: the n-th retry waits between half and all of
    ``min(max, min * 2**n)``. Iceberg Java's names and defaults.
``s3.delete.batch-size`` (default 250, at most 1000)
    Keys per ``DeleteObjects`` request (:mod:`firn.io.s3_delete`); Iceberg Java's name and
    default.

Writes are not retried by Firn: the SDK retries each request of an upload, and a write that
still fails raises, so a commit that cannot write its metadata fails before it reaches the
catalog (whose compare-and-swap is the commit point) and never commits twice.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from firn.errors import ValidationError
from firn.util.properties import parse_bool

logger = logging.getLogger(__name__)

# -- property names (Iceberg FileIO conventions, shared with Java and PyIceberg) ---------------
S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_ANONYMOUS = "s3.anonymous"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_ROLE_ARN = "s3.role-arn"
S3_ROLE_SESSION_NAME = "s3.role-session-name"
S3_PROXY_URI = "s3.proxy-uri"
S3_RETRY_NUM_RETRIES = "s3.retry.num-retries"
S3_RETRY_MIN_WAIT_MS = "s3.retry.min-wait-ms"
S3_RETRY_MAX_WAIT_MS = "s3.retry.max-wait-ms"
S3_DELETE_BATCH_SIZE = "s3.delete.batch-size"
CLIENT_REGION = "client.region"

DEFAULT_CONNECT_TIMEOUT_S = 1.0
DEFAULT_REQUEST_TIMEOUT_S = 3.0
DEFAULT_NUM_RETRIES = 5
DEFAULT_MIN_WAIT_MS = 2000
DEFAULT_MAX_WAIT_MS = 20000
DEFAULT_DELETE_BATCH_SIZE = 250
MAX_DELETE_BATCH_SIZE = 1000  # S3's limit for one DeleteObjects request

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.DOTALL)
# Errors no retry can fix: the request itself is refused. Anything else from an S3 call
# (throttling, 5xx, timeouts, dropped connections, and the INTERNAL_FAILURE pyarrow reports
# for a read whose error body it could not store) may pass on another try.
_PERMANENT = re.compile(
    r"ACCESS_DENIED|AccessDenied|NO_SUCH_BUCKET|NoSuchBucket|INVALID_ACCESS_KEY_ID|InvalidAccessKeyId|"
    r"SIGNATURE_DOES_NOT_MATCH|SignatureDoesNotMatch|InvalidBucketName|HTTP status (?:400|401|403|404|301)\b"
)

T = TypeVar("T")


def split_endpoint(endpoint: str) -> tuple[str | None, str]:
    """``http://host:9000`` -> (``http``, ``host:9000``); pyarrow takes the scheme separately."""
    m = _URI.match(endpoint)
    if m is None:
        return None, endpoint.rstrip("/")
    return m.group(1).lower(), m.group(2).rstrip("/")


def _number(props: Mapping[str, str], key: str, default: float, *, minimum: float, integer: bool) -> float:
    raw = props.get(key)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ValidationError(f"FileIO property {key} must be {kind}, got {raw!r}") from None
    if value < minimum or value != value:  # NaN compares unequal to itself
        raise ValidationError(f"FileIO property {key} must be >= {minimum:g}, got {raw!r}")
    return value


def is_transient(exc: BaseException) -> bool:
    """Whether another try of the S3 call that raised ``exc`` may succeed."""
    if isinstance(exc, FileNotFoundError | FileExistsError | PermissionError):
        return False
    return isinstance(exc, OSError | pa.ArrowException) and _PERMANENT.search(str(exc)) is None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter (Firn's own retries)."""

    retries: int = DEFAULT_NUM_RETRIES
    min_wait_s: float = DEFAULT_MIN_WAIT_MS / 1000
    max_wait_s: float = DEFAULT_MAX_WAIT_MS / 1000
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): half to all of the cap."""
        cap = min(self.max_wait_s, self.min_wait_s * (2**retry))
        return cap / 2 + random.uniform(0, cap / 2)

    def call(self, what: str, fn: Callable[[], T], transient: Callable[[BaseException], bool]) -> T:
        """``fn()``, retried up to ``retries`` times while it raises a transient error; the
        last error propagates (callers wrap it, naming the location)."""
        for retry in range(self.retries + 1):
            try:
                return fn()
            except Exception as e:
                if retry >= self.retries or not transient(e):
                    raise
                wait = self.delay(retry)
                logger.info(
                    "%s failed (%s); retry %d of %d in %.2f s", what, e, retry + 1, self.retries, wait
                )
                self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


@dataclass(frozen=True, slots=True)
class S3Settings:
    """The ``s3.*`` properties of a FileIO, parsed and checked once (values from the
    properties, else the environment; ``None`` leaves a setting to the AWS default chain)."""

    endpoint_scheme: str | None = None
    endpoint_host: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    anonymous: bool = False
    role_arn: str | None = None
    role_session_name: str | None = None
    region: str | None = None
    path_style: bool | None = None  # None: pyarrow's choice (path-style with an endpoint)
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    proxy_uri: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    delete_batch_size: int = DEFAULT_DELETE_BATCH_SIZE

    def __repr__(self) -> str:  # never the secret or the token
        return (
            f"S3Settings(endpoint={self.endpoint_scheme}://{self.endpoint_host}, region={self.region}, "
            f"retries={self.retry.retries}, delete_batch_size={self.delete_batch_size})"
        )

    @staticmethod
    def from_properties(props: Mapping[str, str], environ: Mapping[str, str] | None = None) -> S3Settings:
        env = os.environ if environ is None else environ
        endpoint = props.get(S3_ENDPOINT) or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        scheme, host = split_endpoint(endpoint) if endpoint else (None, None)
        access_key = props.get(S3_ACCESS_KEY_ID) or None
        min_wait = _number(props, S3_RETRY_MIN_WAIT_MS, DEFAULT_MIN_WAIT_MS, minimum=0, integer=True)
        max_wait = _number(props, S3_RETRY_MAX_WAIT_MS, DEFAULT_MAX_WAIT_MS, minimum=0, integer=True)
        if max_wait < min_wait:
            raise ValidationError(
                f"FileIO property {S3_RETRY_MAX_WAIT_MS} ({max_wait:g}) is below {S3_RETRY_MIN_WAIT_MS} ({min_wait:g})"
            )
        batch = int(_number(props, S3_DELETE_BATCH_SIZE, DEFAULT_DELETE_BATCH_SIZE, minimum=1, integer=True))
        if batch > MAX_DELETE_BATCH_SIZE:
            raise ValidationError(
                f"FileIO property {S3_DELETE_BATCH_SIZE} must be at most {MAX_DELETE_BATCH_SIZE} "
                f"(S3's limit per DeleteObjects request), got {batch}"
            )
        return S3Settings(
            endpoint_scheme=scheme,
            endpoint_host=host,
            access_key_id=access_key,
            secret_access_key=props.get(S3_SECRET_ACCESS_KEY) if access_key else None,
            session_token=(props.get(S3_SESSION_TOKEN) or None) if access_key else None,
            anonymous=parse_bool(props.get(S3_ANONYMOUS)),
            role_arn=props.get(S3_ROLE_ARN) or None,
            role_session_name=props.get(S3_ROLE_SESSION_NAME) or None,
            region=props.get(S3_REGION)
            or props.get(CLIENT_REGION)
            or env.get("AWS_REGION")
            or env.get("AWS_DEFAULT_REGION")
            or None,
            path_style=parse_bool(props[S3_PATH_STYLE_ACCESS]) if S3_PATH_STYLE_ACCESS in props else None,
            connect_timeout_s=_number(
                props, S3_CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT_S, minimum=0.001, integer=False
            ),
            request_timeout_s=_number(
                props, S3_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT_S, minimum=0.001, integer=False
            ),
            proxy_uri=props.get(S3_PROXY_URI) or None,
            retry=RetryPolicy(
                retries=int(
                    _number(props, S3_RETRY_NUM_RETRIES, DEFAULT_NUM_RETRIES, minimum=0, integer=True)
                ),
                min_wait_s=min_wait / 1000,
                max_wait_s=max_wait / 1000,
            ),
            delete_batch_size=batch,
        )

    def region_for(self, bucket: str | None) -> str | None:
        """The configured region; without one and without an endpoint, the bucket's own
        region as S3 reports it (one request), else None (the SDK's default)."""
        if self.region or self.endpoint_host or not bucket:
            return self.region
        try:
            return str(pafs.resolve_s3_region(bucket))
        except (OSError, pa.ArrowException) as e:
            logger.debug("could not resolve the region of bucket %s: %s", bucket, e)
            return None

    def pyarrow_options(self, region: str | None) -> dict[str, object]:
        """``pyarrow.fs.S3FileSystem`` keyword arguments for a bucket in ``region``."""
        opts: dict[str, object] = {}
        if self.endpoint_host:
            opts["endpoint_override"] = self.endpoint_host
            if self.endpoint_scheme:
                opts["scheme"] = self.endpoint_scheme
        if self.access_key_id:
            opts["access_key"] = self.access_key_id
            opts["secret_key"] = self.secret_access_key
            if self.session_token:
                opts["session_token"] = self.session_token
        if self.anonymous:
            opts["anonymous"] = True
        if self.role_arn:
            opts["role_arn"] = self.role_arn
            if self.role_session_name:
                opts["session_name"] = self.role_session_name
        if region:
            opts["region"] = region
        if self.path_style is not None:
            # pyarrow uses path-style with a custom endpoint unless virtual addressing is forced.
            opts["force_virtual_addressing"] = not self.path_style
        opts["connect_timeout"] = self.connect_timeout_s
        opts["request_timeout"] = self.request_timeout_s
        opts["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=self.retry.retries + 1)
        # A small file is written with one PUT when it is closed, instead of an eager
        # multipart upload (initiate, part, complete) after a directory check: 1 request
        # instead of 5. A failure (a missing bucket) then surfaces when the stream closes,
        # which every Firn write does before it returns.
        opts["allow_delayed_open"] = True
        if self.proxy_uri:
            opts["proxy_options"] = self.proxy_uri
        return opts


__all__ = [
    "CLIENT_REGION",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_DELETE_BATCH_SIZE",
    "DEFAULT_MAX_WAIT_MS",
    "DEFAULT_MIN_WAIT_MS",
    "DEFAULT_NUM_RETRIES",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "MAX_DELETE_BATCH_SIZE",
    "RetryPolicy",
    "S3Settings",
    "S3_ACCESS_KEY_ID",
    "S3_ANONYMOUS",
    "S3_CONNECT_TIMEOUT",
    "S3_DELETE_BATCH_SIZE",
    "S3_ENDPOINT",
    "S3_PATH_STYLE_ACCESS",
    "S3_PROXY_URI",
    "S3_REGION",
    "S3_REQUEST_TIMEOUT",
    "S3_RETRY_MAX_WAIT_MS",
    "S3_RETRY_MIN_WAIT_MS",
    "S3_RETRY_NUM_RETRIES",
    "S3_ROLE_ARN",
    "S3_ROLE_SESSION_NAME",
    "S3_SECRET_ACCESS_KEY",
    "S3_SESSION_TOKEN",
    "is_transient",
    "split_endpoint",
]
