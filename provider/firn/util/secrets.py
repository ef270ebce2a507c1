"""Secrets never printed: the one place that decides what is a secret and masks it.

Catalog URIs and catalog or FileIO properties carry credentials (a database password in a
URI, ``s3.secret-access-key``, a REST ``token`` or ``credential``). Every message, ``repr()``
and log line that may show them goes through :func:`mask_secrets` (text) or
:func:`masked_properties` (a property mapping), which replace each secret with ``***``:

* the password of a URI's user-info (``postgresql://user:***@host/db``), also when written
  unencoded with ``@`` or ``/`` in it;
* the value of a URI query parameter, a ``key=value`` pair or a ``'key': 'value'`` pair
  (a dict's ``repr()``, JSON) whose key names a secret (:func:`is_secret_key`):
  ``?password=***``, ``s3.secret-access-key=***``;
* any secret the caller knows (a connection's password), as written and in the percent-encoded
  forms a URI gives it (:func:`encoded_forms`).

Masking is deliberately broad: showing ``***`` where no secret was costs a little clarity,
showing a secret costs the secret.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

MASK = "***"

# Words that make a property, parameter or header name secret (matched in the lower-cased
# name with '_' read as '-'): Iceberg's and PyIceberg's FileIO and catalog properties
# (s3.secret-access-key, s3.session-token, gcs.oauth2.token, adls.sas-token.*, adls.account-key,
# token, credential), database DSN keywords (password, passwd), HTTP headers (authorization).
SECRET_KEY_WORDS: tuple[str, ...] = (
    "secret",
    "password",
    "passwd",
    "pwd",
    "token",
    "credential",
    "private-key",
    "passphrase",
    "api-key",
    "apikey",
    "authorization",
    "account-key",
    "sse.key",
    "signature",
)

# Shorter known secrets are not replaced inside free text: "***" for every "ab" would garble
# messages without protecting much (Airflow's masker draws the line at 5 characters).
MIN_KNOWN_SECRET_LENGTH = 4

_KEY_CHARS = r"[A-Za-z0-9_.\-]"
# scheme://user:password@ -- the password runs to the last '@' of the token, so that an
# unencoded '@' or '/' in it is masked too.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@'\"<>]*):(?P<password>[^\s'\"<>]*)@")
# ?key=value, &key=value, ;key=value (URI queries), and key=value after a space or a start.
_PAIR = re.compile(rf"(?P<head>(?:^|[?&;\s,(]){_KEY_CHARS}+?=)(?P<value>[^&;\s'\",)#]*)")
# 'key': 'value' and "key": "value" (a dict's repr, JSON)
_QUOTED_PAIR = re.compile(
    r"(?P<head>(?P<q>['\"])(?P<key>[^'\"\s]{1,200})(?P=q)\s*:\s*)(?P<vq>['\"])(?P<value>(?:\\.|(?!(?P=vq)).)*)(?P=vq)"
)


def is_secret_key(key: str) -> bool:
    """Whether a property, parameter or header named ``key`` holds a secret."""
    lowered = key.strip().lower().replace("_", "-")
    return any(word in lowered for word in SECRET_KEY_WORDS)


def encoded_forms(secret: str) -> list[str]:
    """``secret`` and the forms a URI may give it, longest first: percent-encoded fully,
    as a form value (``+`` for space), and as SQLAlchemy renders a URL's password (only
    ``:``, ``@`` and ``/`` escaped), plus the decoded form of an encoded secret."""
    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        quote(secret),
        re.sub(r"[:@/]", lambda m: f"%{ord(m.group(0)):02X}", secret),
        unquote(secret),
        unquote_plus(secret),
    }
    return sorted((f for f in forms if f), key=len, reverse=True)


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with every secret in it replaced by ``***`` (see the module docstring).

    ``known``: secrets the caller holds (a password, a token), masked wherever they appear,
    in every form of :func:`encoded_forms` (those shorter than ``MIN_KNOWN_SECRET_LENGTH``
    only where the structural rules find them).
    """
    if not text:
        return text
    forms = sorted(
        {f for s in known if s and len(s) >= MIN_KNOWN_SECRET_LENGTH for f in encoded_forms(s)},
        key=len,
        reverse=True,
    )
    for form in forms:
        if len(form) >= MIN_KNOWN_SECRET_LENGTH:
            text = text.replace(form, MASK)
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    text = _PAIR.sub(_mask_pair, text)
    return _QUOTED_PAIR.sub(_mask_quoted_pair, text)


def _mask_pair(m: re.Match[str]) -> str:
    head = m.group("head")
    key = head.lstrip("?&;,( \t\r\n")[:-1]
    if not m.group("value") or not is_secret_key(key):
        return m.group(0)
    return f"{head}{MASK}"


def _mask_quoted_pair(m: re.Match[str]) -> str:
    if not m.group("value") or not is_secret_key(m.group("key")):
        return m.group(0)
    quote_char = m.group("vq")
    return f"{m.group('head')}{quote_char}{MASK}{quote_char}"


def masked_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``properties`` for display: the value of every secret key is ``***``, and
    secrets inside the other values (a URI with a password) are masked."""
    return {
        key: (
            MASK
            if value and is_secret_key(str(key))
            else mask_secrets(value)
            if isinstance(value, str)
            else value
        )
        for key, value in properties.items()
    }


def masked_repr(obj: Any) -> str:
    """The ``repr()`` of a dataclass instance, as ``dataclasses`` writes it, with its secrets
    masked: ``__repr__ = masked_repr`` for dataclasses that hold catalog or FileIO properties."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return mask_secrets(repr(obj))
    fields = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj) if f.repr)
    return mask_secrets(f"{type(obj).__qualname__}({fields})")


__all__ = [
    "MASK",
    "MIN_KNOWN_SECRET_LENGTH",
    "SECRET_KEY_WORDS",
    "encoded_forms",
    "is_secret_key",
    "mask_secrets",
    "masked_properties",
    "masked_repr",
]
