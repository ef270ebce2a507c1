"""Typed reads of the fields of Iceberg's JSON objects: table and view metadata, schemas,
partition specs, sort orders, snapshots, refs, statistics and content-file JSON.

Iceberg Java's parsers (``JsonUtil``) accept for an ``int`` field only an integral JSON number
that fits 32 bits, for a ``long`` only one that fits 64 bits, for a boolean only ``true`` or
``false`` and for a string only a JSON string. Python's ``int()``, ``bool()`` and ``str()``
would instead turn ``1.5`` into ``1``, ``true`` into ``1``, ``"false"`` into ``True`` and ``5``
into ``"5"``: a different table read without a word. Every reader in :mod:`firn.spec` reads
typed fields through these functions, which refuse such values with an
:class:`~firn.errors.InvalidMetadata` naming the object (``what``) and the field; the file
readers (:func:`~firn.spec.metadata_json.metadata_from_json`,
:func:`~firn.spec.view_metadata_json.view_metadata_from_json`) add the file's location.

A JSON number with a fraction or an exponent (``1.0``, ``1e3``) is not an integer here, as in
Java (Jackson reads it as a double, which ``isIntegralNumber`` refuses), even when its value is
integral. The checks use ``type(v) is int``: ``json.loads`` makes exactly ``int`` for integral
numbers, and the test also refuses ``bool`` (a subclass of ``int``) in one comparison, which
matters on the hot path (a metadata file lists every snapshot).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firn.errors import InvalidMetadata

# Java's int and long (JsonUtil.getInt / getLong: canConvertToInt / canConvertToLong).
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


def _missing(d: object, key: str, what: str) -> InvalidMetadata:
    if not isinstance(d, Mapping):
        return InvalidMetadata(f"{what} must be a JSON object, got {type(d).__name__}")
    return InvalidMetadata(f"{what} is missing required field {key!r}")


def _bad_int(value: object, key: str, what: str, lo: int, hi: int) -> InvalidMetadata:
    if type(value) is int:
        return InvalidMetadata(f"{what}: {key!r} must be an integer in [{lo}, {hi}], got {value!r}")
    return InvalidMetadata(f"{what}: {key!r} must be an integer, got {value!r}")


def require(d: Mapping[str, Any], key: str, what: str) -> Any:
    """The value of required field ``key`` of JSON object ``d`` (which may be null)."""
    try:
        return d[key]
    except (KeyError, TypeError, IndexError):
        raise _missing(d, key, what) from None


def optional(d: Mapping[str, Any], key: str, what: str) -> Any:
    """The value of optional field ``key`` of JSON object ``d``; ``None`` when absent."""
    try:
        return d.get(key)
    except AttributeError:
        raise _missing(d, key, what) from None


# The getters below repeat the lookup of require()/optional() inline: they run for every
# field of every snapshot of a metadata file, and a nested call per field costs about a
# quarter of a snapshot's parse time.
def get_int(d: Mapping[str, Any], key: str, what: str) -> int:
    """Required field ``key``: an integral JSON number that fits 32 bits (a Java ``int``)."""
    try:
        value = d[key]
    except (KeyError, TypeError, IndexError):
        raise _missing(d, key, what) from None
    if type(value) is int and INT_MIN <= value <= INT_MAX:
        return value
    raise _bad_int(value, key, what, INT_MIN, INT_MAX)


def get_long(d: Mapping[str, Any], key: str, what: str) -> int:
    """Required field ``key``: an integral JSON number that fits 64 bits (a Java ``long``)."""
    try:
        value = d[key]
    except (KeyError, TypeError, IndexError):
        raise _missing(d, key, what) from None
    if type(value) is int and LONG_MIN <= value <= LONG_MAX:
        return value
    raise _bad_int(value, key, what, LONG_MIN, LONG_MAX)


def opt_int(d: Mapping[str, Any], key: str, what: str) -> int | None:
    """Optional field ``key`` as :func:`get_int`; ``None`` when absent or null."""
    try:
        value = d.get(key)
    except AttributeError:
        raise _missing(d, key, what) from None
    if value is None or (type(value) is int and INT_MIN <= value <= INT_MAX):
        return value
    raise _bad_int(value, key, what, INT_MIN, INT_MAX)


def opt_long(d: Mapping[str, Any], key: str, what: str) -> int | None:
    """Optional field ``key`` as :func:`get_long`; ``None`` when absent or null."""
    try:
        value = d.get(key)
    except AttributeError:
        raise _missing(d, key, what) from None
    if value is None or (type(value) is int and LONG_MIN <= value <= LONG_MAX):
        return value
    raise _bad_int(value, key, what, LONG_MIN, LONG_MAX)


def get_bool(d: Mapping[str, Any], key: str, what: str) -> bool:
    """Required field ``key``: JSON ``true`` or ``false``."""
    value = require(d, key, what)
    if type(value) is bool:
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be true or false, got {value!r}")


def opt_bool(d: Mapping[str, Any], key: str, what: str) -> bool | None:
    """Optional field ``key`` as :func:`get_bool`; ``None`` when absent or null."""
    value = optional(d, key, what)
    if value is None or type(value) is bool:
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be true or false, got {value!r}")


def get_str(d: Mapping[str, Any], key: str, what: str) -> str:
    """Required field ``key``: a JSON string."""
    value = require(d, key, what)
    if isinstance(value, str):
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be a string, got {value!r}")


def opt_str(d: Mapping[str, Any], key: str, what: str) -> str | None:
    """Optional field ``key`` as :func:`get_str`; ``None`` when absent or null."""
    try:
        value = d.get(key)
    except AttributeError:
        raise _missing(d, key, what) from None
    if value is None or isinstance(value, str):
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be a string or null, got {value!r}")


def get_list(d: Mapping[str, Any], key: str, what: str) -> list[Any]:
    """Required field ``key``: a JSON array."""
    value = require(d, key, what)
    if isinstance(value, list):
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be a list, got {type(value).__name__}")


def opt_list(d: Mapping[str, Any], key: str, what: str) -> list[Any]:
    """Optional field ``key`` as :func:`get_list`; empty when absent or null."""
    value = optional(d, key, what)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise InvalidMetadata(f"{what}: {key!r} must be a list, got {type(value).__name__}")


def _int_list(d: Mapping[str, Any], key: str, what: str, lo: int, hi: int) -> tuple[int, ...] | None:
    value = optional(d, key, what)
    if value is None:
        return None
    if isinstance(value, list) and all(type(v) is int and lo <= v <= hi for v in value):
        return tuple(value)
    raise InvalidMetadata(f"{what}: {key!r} must be a list of integers in [{lo}, {hi}], got {value!r}")


def opt_int_list(d: Mapping[str, Any], key: str, what: str) -> tuple[int, ...] | None:
    """Optional field ``key``: a JSON array of 32-bit integers; ``None`` when absent or null."""
    return _int_list(d, key, what, INT_MIN, INT_MAX)


def opt_long_list(d: Mapping[str, Any], key: str, what: str) -> tuple[int, ...] | None:
    """Optional field ``key``: a JSON array of 64-bit integers; ``None`` when absent or null."""
    return _int_list(d, key, what, LONG_MIN, LONG_MAX)


def all_longs(values: list[Any]) -> bool:
    """Whether every item of ``values`` is an integral JSON number that fits 64 bits: a check
    of a long column in C loops (type set, ``min``, ``max``), for readers of long lists that
    fall back to the field readers for the error when it fails."""
    return not values or (
        _INT_ONLY.issuperset(map(type, values)) and min(values) >= LONG_MIN and max(values) <= LONG_MAX
    )


_INT_ONLY = frozenset((int,))


def get_object(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` itself, which must be a JSON object (``what`` names it in the error)."""
    if type(value) is dict or isinstance(value, Mapping):
        return value
    raise InvalidMetadata(f"{what} must be a JSON object, got {type(value).__name__}")


__all__ = [
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "all_longs",
    "get_bool",
    "get_int",
    "get_list",
    "get_long",
    "get_object",
    "get_str",
    "opt_bool",
    "opt_int",
    "opt_int_list",
    "opt_list",
    "opt_long",
    "opt_long_list",
    "opt_str",
    "optional",
    "require",
]
