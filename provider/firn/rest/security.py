"""What the server checks before a route runs: the Host header, the request body's size, and
the rate of token requests.

* **Host allow-list** (:class:`HostAllowList`): a request whose ``Host`` is not an allowed name
  is refused (400) before routing. A browser tricked by DNS rebinding sends the attacker's
  name as ``Host`` and so never reaches a route. Loopback names by default
  (:data:`LOOPBACK_HOSTS`); ``*`` allows any host, ``*.example.com`` any subdomain.
* **Body cap** (:class:`BodyLimit`): a body past ``max_bytes`` is refused with a 413, by its
  ``Content-Length`` before anything is read, or as soon as a chunked body passes the cap.
* **Token rate limit** (:class:`RateLimiter`): a token bucket per client address for
  ``/v1/oauth/tokens``, so client secrets cannot be guessed at network speed.

Both middlewares answer in the spec's error model.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from firn.catalog.rest import protocol as p
from firn.errors import ValidationError
from firn.rest.errors import REQUEST_TOO_LARGE, error_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
ANY_HOST = "*"
# Request bodies (createTable, updateTable, ...) are small JSON documents: a schema of 10,000
# columns is about 2 MiB.
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or a host name) is this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name of a ``Host`` header value, without its port (``[::1]:8181`` -> ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def check_allowed_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The allow-list, normalised (lower case, no brackets); an empty one is an error."""
    names = tuple(dict.fromkeys(h.strip().strip("[]").lower() for h in hosts if h.strip()))
    if not names:
        raise ValidationError("the Host allow-list is empty: no request could be served")
    for name in names:
        if name != ANY_HOST and "*" in name and not (name.startswith("*.") and "*" not in name[2:]):
            raise ValidationError(f"allowed host {name!r}: '*' may only be the whole name or a '*.' prefix")
    return names


def host_allowed(header: str | None, allowed: tuple[str, ...]) -> bool:
    if ANY_HOST in allowed:
        return True
    if not header:
        return False
    name = _host_name(header)
    return any(name == a or (a.startswith("*.") and name.endswith(a[1:])) for a in allowed)


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, kind: str, message: str) -> None:
    response = error_response(status, kind, message)
    await response(scope, receive, send)


class HostAllowList:
    """ASGI middleware: HTTP requests must name an allowed host (module docstring)."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = check_allowed_hosts(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), None)
            if not host_allowed(header, self.allowed):
                shown = (header or "")[:100]
                await _answer(
                    scope,
                    receive,
                    send,
                    400,
                    p.BAD_REQUEST,
                    f"the Host header {shown!r} is not one this server answers to "
                    "(its allowed hosts are set with --allowed-host)",
                )
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: request bodies of at most ``max_bytes`` (module docstring).

    The body is read here, up to the cap, and handed to the app whole: every route reads
    whole bodies anyway, and a body refused half-way must not reach a route at all.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValidationError(f"the request body limit must be positive, got {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"the request body is larger than this server accepts ({self.max_bytes} bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope.get("headers", ()) if k == b"content-length"), None)
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await _answer(scope, receive, send, 413, REQUEST_TOO_LARGE, self._message())
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _answer(scope, receive, send, 413, REQUEST_TOO_LARGE, self._message())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


@dataclass(frozen=True)
class RateLimit:
    """``per_minute`` requests a minute per client address, in bursts of up to ``burst``."""

    per_minute: float = 60.0
    burst: int = 20

    def __post_init__(self) -> None:
        if self.per_minute <= 0 or self.burst < 1:
            raise ValidationError(f"a rate limit needs a positive rate and burst, got {self}")


# Token requests: a client asks once per token lifetime (an hour), so a burst of 20 and one a
# second after it serve many clients behind one address, while guessing a secret at that
# rate is hopeless.
DEFAULT_TOKEN_RATE_LIMIT = RateLimit()


class RateLimiter:
    """Token buckets by key (the client address), thread-safe, remembering at most
    ``max_keys`` keys (the least recently seen are forgotten, i.e. given a full bucket)."""

    def __init__(
        self, limit: RateLimit, *, max_keys: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0 when allowed, else the seconds until it is."""
        rate = self.limit.per_minute / 60.0
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.pop(key, (float(self.limit.burst), now))
            tokens = min(float(self.limit.burst), tokens + (now - at) * rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
            self._buckets[key] = (tokens - 1 if wait == 0 else tokens, now)
            while len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
            return wait


__all__ = [
    "ANY_HOST",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_TOKEN_RATE_LIMIT",
    "LOOPBACK_HOSTS",
    "BodyLimit",
    "HostAllowList",
    "RateLimit",
    "RateLimiter",
    "check_allowed_hosts",
    "host_allowed",
    "is_loopback",
]
