"""What the sensors share: reading a trigger's event, and recognising unrendered templates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    LeaseHeld,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotAuthorized,
    NotFound,
    RewrittenConcurrently,
    StalePlan,
    Unsupported,
    ValidationConflict,
    ValidationError,
)

# The errors a trigger may name in its event (``type(e).__name__``) and that the task raises
# again as themselves. Each takes one message; an unlisted name becomes a plain FirnError.
TRIGGER_ERRORS: dict[str, type[FirnError]] = {
    cls.__name__: cls
    for cls in (
        AlreadyExists,
        CommitConflict,
        CommitStateUnknown,
        FirnError,
        InvalidMetadata,
        LeaseHeld,
        NamespaceNotEmpty,
        NoSuchNamespace,
        NoSuchTable,
        NoSuchView,
        NotAuthorized,
        NotFound,
        RewrittenConcurrently,
        StalePlan,
        Unsupported,
        ValidationConflict,
        ValidationError,
    )
}


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
    raise TRIGGER_ERRORS.get(str(event.get("error") or ""), FirnError)(message)


__all__ = ["TRIGGER_ERRORS", "event_result", "is_template"]
