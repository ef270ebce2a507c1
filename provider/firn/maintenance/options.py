"""Options of maintenance operations, spelled as Iceberg's procedure options.

Python callers pass keyword arguments with ``_`` for ``-`` (``min_input_files=2``); the CLI and
the Spark job pass Iceberg's hyphenated names (``min-input-files``). Both normalize to the
hyphenated name. An unknown option is a ``ValidationError`` listing the valid ones; a value of
the wrong kind is one naming the option.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from firn.errors import ValidationError
from firn.util.timestamps import to_timestamp_ms


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValidationError(f"option {name!r} must be true or false, got {value!r}")


def _int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise ValidationError(f"option {name!r} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"option {name!r} must be an integer, got {value!r}")


def _float(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise ValidationError(f"option {name!r} must be a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"option {name!r} must be a number, got {value!r}")


def _str(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    raise ValidationError(f"option {name!r} must be a string, got {value!r}")


def _timestamp_ms(name: str, value: object) -> int:
    """A point in time: a timezone-aware datetime, epoch milliseconds (an int, or a float such
    as ``time.time() * 1000``, truncated), or ISO-8601 text with an offset. A naive datetime,
    a date or text without an offset is refused: which instant it means depends on the machine."""
    return to_timestamp_ms(value, what=f"option {name!r}", naive="refuse")


def _int_list(name: str, value: object) -> tuple[int, ...]:
    if isinstance(value, str):
        parts = [p for p in value.replace(" ", "").split(",") if p]
        return tuple(_int(name, p) for p in parts)
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(_int(name, v) for v in value)
    raise ValidationError(f"option {name!r} must be a list of integers, got {value!r}")


def _str_list(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list | tuple):
        return tuple(_str(name, v) for v in value)
    raise ValidationError(f"option {name!r} must be a list of strings, got {value!r}")


def _str_map(name: str, value: object) -> dict[str, str]:
    """A string map: a mapping, or its JSON object text (``{"s3a,s3n": "s3"}``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValidationError(
                f"option {name!r} must be a JSON object of strings, got {value!r}"
            ) from None
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise ValidationError(f"option {name!r} must map strings to strings, got {value!r}")


PARSERS: dict[str, Callable[[str, object], Any]] = {
    "bool": _bool,
    "int": _int,
    "float": _float,
    "str": _str,
    "timestamp": _timestamp_ms,
    "int-list": _int_list,
    "str-list": _str_list,
    "str-map": _str_map,
}


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its Iceberg name, kind (a key of :data:`PARSERS`), and what it is for.

    The default is not here: defaults that come from table properties are resolved by the
    planner against the table, so a plan records the values it actually used.
    """

    name: str
    kind: str
    doc: str
    choices: tuple[str, ...] = ()

    def parse(self, value: object) -> Any:
        parsed = PARSERS[self.kind](self.name, value)
        if self.choices and parsed not in self.choices:
            raise ValidationError(f"option {self.name!r} must be one of {list(self.choices)}, got {value!r}")
        return parsed


def normalize_name(name: str) -> str:
    return name.strip().replace("_", "-")


def parse_options(operation: str, spec: Mapping[str, Option], given: Mapping[str, object]) -> dict[str, Any]:
    """Parse ``given`` (keyword or hyphenated names; None means "not given") against ``spec``.

    Returns the given options by hyphenated name, parsed; unknown names are an error that
    lists every valid option."""
    out: dict[str, Any] = {}
    # Iceberg names with dots (``partial-progress.enabled``) have no keyword spelling: accept
    # ``partial_progress_enabled`` for them.
    dotted = {n.replace(".", "-"): n for n in spec if "." in n}
    for raw, value in given.items():
        name = normalize_name(raw)
        name = dotted.get(name, name)
        option = spec.get(name)
        if option is None:
            valid = ", ".join(sorted(spec))
            raise ValidationError(f"{operation} has no option {raw!r}; valid options: {valid}")
        if name in out:
            raise ValidationError(f"{operation}: option {name!r} was given twice")
        if value is not None:
            out[name] = option.parse(value)
    return out


def options_of(*options: Option) -> dict[str, Option]:
    """An option table keyed by name (for an operation's ``OPTIONS``)."""
    return {o.name: o for o in options}


__all__ = ["PARSERS", "Option", "normalize_name", "options_of", "parse_options"]
