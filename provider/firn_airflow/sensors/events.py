"""What the sensors share: reading a trigger's event, and recognising unrendered templates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firn.errors import FirnError, error_class


def is_template(value: object) -> bool:
    """Whether ``value`` is a Jinja template still to be rendered (checked at run time instead)."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def event_result(event: object, key: str, *, task: str) -> Any:
    """``event[key]`` of a successful trigger event; the trigger's error as a task error otherwise.

    The error keeps its Firn kind when the trigger named one (``NoSuchTable`` stays
    ``NoSuchTable``), so ``except`` clauses and the task log read the same as in poke mode.
    """
    if not isinstance(event, Mapping):
        raise FirnError(f"{task}: the trigger sent no event payload (got {event!r})")
    if event.get("status") == "success" and key in event:
        return event[key]
    message = str(event.get("message") or f"the trigger failed without a message: {dict(event)!r}")
    # The trigger names the error's class (type(e).__name__); Firn's own come back as themselves
    # (each takes one message), any other name as a plain FirnError.
    raise (error_class(str(event.get("error") or "")) or FirnError)(message)


__all__ = ["event_result", "is_template"]
