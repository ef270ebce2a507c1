"""Strict reading of JSON objects received from outside (REST requests and responses).

Spec objects embedded in them (schemas, snapshots) are parsed by their own readers in
``firn.spec``; this reader checks the envelope: required fields, their JSON types, and fields
that nobody asked for (an unknown field is an error, not something to ignore silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from firn.errors import FirnError, ValidationError


class JsonObjectReader:
    """Reads the fields of one JSON object, type-checked; :meth:`finish` refuses the fields
    nobody read. Every problem is a ``ValidationError`` naming ``what`` and the field."""

    def __init__(self, data: Any, what: str, discriminator: str | None = None) -> None:
        if not isinstance(data, Mapping):
            raise ValidationError(f"{what} must be a JSON object, got {type(data).__name__}")
        self.data = data
        self.what = what
        self.seen: set[str] = {discriminator} if discriminator else set()

    def value(self, key: str, *, required: bool = True) -> Any:
        self.seen.add(key)
        value = self.data.get(key)
        if value is None and required:
            raise ValidationError(f"{self.what} is missing required field {key!r}")
        return value

    def get_int(self, key: str) -> int:
        value = self.value(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValidationError(f"{self.what} field {key!r} must be an integer, got {value!r}")
        return value

    def opt_int(self, key: str) -> int | None:
        return self.get_int(key) if self.value(key, required=False) is not None else None

    def get_str(self, key: str) -> str:
        value = self.value(key)
        if not isinstance(value, str):
            raise ValidationError(f"{self.what} field {key!r} must be a string, got {value!r}")
        return value

    def get_list(self, key: str, item: type) -> tuple[Any, ...]:
        value = self.value(key)
        if not isinstance(value, list) or not all(
            isinstance(v, item) and not isinstance(v, bool) for v in value
        ):
            raise ValidationError(
                f"{self.what} field {key!r} must be a list of {item.__name__}, got {value!r}"
            )
        return tuple(value)

    def str_map(self, key: str) -> Mapping[str, str]:
        value = self.value(key)
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ValidationError(f"{self.what} field {key!r} must map strings to strings, got {value!r}")
        return MappingProxyType(dict(value))

    def nested(self, key: str, parse: Callable[[Any], Any]) -> Any:
        """Parse an embedded spec object (schema, snapshot, ...) with the spec's own reader."""
        value = self.value(key)
        if not isinstance(value, Mapping):
            raise ValidationError(f"{self.what} field {key!r} must be a JSON object, got {value!r}")
        try:
            return parse(value)
        except (FirnError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValidationError(f"{self.what} field {key!r} is invalid: {e}") from e

    def finish(self) -> None:
        unknown = sorted(str(k) for k in self.data if k not in self.seen)
        if unknown:
            raise ValidationError(f"{self.what} has unknown field(s) {unknown}")


__all__ = ["JsonObjectReader"]
