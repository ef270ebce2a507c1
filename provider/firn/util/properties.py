"""Parsing of string-valued properties shared by FileIO and catalogs."""

from __future__ import annotations

from firn.errors import ValidationError


def parse_bool(value: str | None, *, default: bool = False) -> bool:
    """Iceberg-style boolean property: ``true``/``false`` (any case, also ``1``/``0`` and
    ``yes``/``no``); anything else is an error."""
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValidationError(f"expected a boolean property value, got {value!r}")


__all__ = ["parse_bool"]
