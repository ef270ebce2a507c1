"""Operator arguments turned into the options a maintenance operation takes.

Operators accept Iceberg's option names hyphenated (``min-input-files``) or with underscores
(``min_input_files``), after Jinja rendering. The result is a JSON object in hyphenated names,
identical for both runners: the local runner passes it to ``table.maintenance.<op>(**options)``,
the Spark runner to the job's ``--options``. Points in time (``older_than``) become epoch
milliseconds here, so an aware ``datetime``, ISO-8601 text (what ``{{ data_interval_end }}``
renders to) and epoch milliseconds all work and both runners see the same number.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from firn.errors import ValidationError
from firn.maintenance.options import PARSERS, normalize_name

# Options holding a point in time (epoch milliseconds once parsed).
_TIMESTAMP_OPTIONS = frozenset({"older-than"})


def timestamp_ms(name: str, value: object) -> int:
    """``value`` (aware datetime, ISO-8601 text with an offset, epoch milliseconds) as epoch ms
    (pendulum's DateTime included: what ``data_interval_end`` is under native rendering)."""
    parsed: int = PARSERS["timestamp"](name, value)
    return parsed


def _jsonable(where: str, name: str, value: object) -> Any:
    if name in _TIMESTAMP_OPTIONS and value is not None:
        return timestamp_ms(name, value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise ValidationError(
            f"{where}: option {name!r} must be JSON (a string, number, boolean, list or object), "
            f"got {type(value).__name__}"
        ) from None
    return value


def normalize_options(options: object, *, where: str) -> dict[str, Any]:
    """``options`` (a mapping or None) keyed by hyphenated names with JSON values."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValidationError(
            f"{where}: options must be a dict of Iceberg option names, got {type(options).__name__}"
        )
    out: dict[str, Any] = {}
    for key, value in options.items():
        if not isinstance(key, str) or not key.strip():
            raise ValidationError(f"{where}: option names are non-empty strings, got {key!r}")
        name = normalize_name(key)
        if name in out:
            raise ValidationError(f"{where}: option {name!r} is given twice ({key!r})")
        out[name] = _jsonable(where, name, value)
    return out


def merge_options(
    *,
    where: str,
    recommended: Mapping[str, Any] | None = None,
    given: object = None,
    explicit: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The options a run uses: ``recommend()``'s options, overridden by the operator's
    ``options``, plus the operator's own keyword arguments (``explicit``, by keyword name; None
    or empty text means not given). A keyword argument that ``options`` also sets is an error,
    since one of the two values would be silently dropped."""
    base = normalize_options(recommended, where=where)
    user = normalize_options(given, where=where)
    extra: dict[str, Any] = {}
    for keyword, value in (explicit or {}).items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        name = normalize_name(keyword)
        if name in user:
            raise ValidationError(
                f"{where}: {name!r} is given both as {keyword}= and in options; give it once"
            )
        extra[name] = _jsonable(where, name, value)
    return {**base, **user, **extra}


__all__ = ["merge_options", "normalize_options", "timestamp_ms"]
