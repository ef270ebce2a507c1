"""The Firn error hierarchy: one root, a few kinds, each carrying context.

Every error that Firn raises on purpose derives from :class:`FirnError`. Third-party errors
are wrapped with ``raise ... from`` so the original cause stays attached. Messages name the
file or input that was wrong and what was wrong with it.
"""

from __future__ import annotations


class FirnError(Exception):
    """Root of every error Firn raises on purpose."""


class NotFound(FirnError):
    """A table, namespace, view, snapshot, ref or file does not exist."""


class NoSuchTable(NotFound):
    """The named table does not exist in the catalog."""


class NoSuchNamespace(NotFound):
    """The named namespace does not exist in the catalog."""


class NoSuchView(NotFound):
    """The named view does not exist in the catalog."""


class AlreadyExists(FirnError):
    """A table, namespace, view or ref with that name already exists."""


class NamespaceNotEmpty(FirnError):
    """A namespace cannot be dropped while it still holds tables or views."""


class CommitConflict(FirnError):
    """Another writer changed the table first. Retryable: refresh, re-validate, re-apply."""


class ValidationConflict(CommitConflict):
    """A concurrent change conflicts with this operation under the chosen isolation level.

    Unlike a plain :class:`CommitConflict`, re-applying does not help: the operation's
    assumptions no longer hold, so the transaction gives up instead of retrying.
    """


class RewrittenConcurrently(ValidationConflict):
    """The only conflicts are concurrent ``replace`` commits (compaction, delete-file or
    manifest rewrites, root flushes) that moved rows this change planned against.

    They changed no rows, so a change that can plan again (``delete``, ``overwrite``,
    ``upsert``, ``firn.spark.delete``; explicit positions followed by ``_row_id``) does so on
    the refreshed table instead of failing; one that cannot reports this with the reason."""


class StalePlan(ValidationConflict):
    """A maintenance plan made earlier no longer matches the table: plan again."""


class LeaseHeld(FirnError):
    """Another maintenance run holds the table's maintenance lease.

    ``holder``, ``operation`` and ``expires_at_ms`` (epoch milliseconds) describe that run's
    lease when known."""

    def __init__(
        self,
        message: str,
        *,
        holder: str | None = None,
        operation: str | None = None,
        expires_at_ms: int | None = None,
    ) -> None:
        self.holder = holder
        self.operation = operation
        self.expires_at_ms = expires_at_ms
        super().__init__(message)


class CommitStateUnknown(FirnError):
    """The catalog may or may not have applied the commit (e.g. the connection dropped).

    Files written for the attempt are kept, because they may be referenced.
    """


class InvalidMetadata(FirnError):
    """A metadata, manifest, Puffin or data file is corrupt, truncated or violates the spec."""

    def __init__(self, message: str, *, location: str | None = None) -> None:
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class Unsupported(FirnError):
    """A feature, type or format version that Firn does not support."""


class NotAuthorized(FirnError):
    """A catalog service refused the credentials (HTTP 401/403/419): missing, wrong or expired."""


class ValidationError(FirnError, ValueError):
    """Invalid user input: a bad schema change, filter string, option or argument."""


def _defined_here(cls: type[FirnError]) -> list[type[FirnError]]:
    found = [cls] if cls.__module__ == __name__ else []
    for sub in cls.__subclasses__():
        found.extend(_defined_here(sub))
    return found


# Every error class of this module by name, for errors that cross a process boundary by name
# (``type(e).__name__``: a Spark job's result file, a trigger's event): the receiver raises the
# same class again. Only these classes: a name from elsewhere is never looked up.
_BY_NAME: dict[str, type[FirnError]] = {cls.__name__: cls for cls in _defined_here(FirnError)}


def error_class(name: str) -> type[FirnError] | None:
    """The error class of this module named ``name``; ``None`` for any other name."""
    return _BY_NAME.get(name)


def error_names() -> frozenset[str]:
    """The names :func:`error_class` knows."""
    return frozenset(_BY_NAME)


__all__ = [
    "AlreadyExists",
    "CommitConflict",
    "CommitStateUnknown",
    "FirnError",
    "InvalidMetadata",
    "LeaseHeld",
    "NamespaceNotEmpty",
    "NoSuchNamespace",
    "NoSuchTable",
    "NoSuchView",
    "NotAuthorized",
    "NotFound",
    "RewrittenConcurrently",
    "StalePlan",
    "Unsupported",
    "ValidationConflict",
    "ValidationError",
    "error_class",
    "error_names",
]
