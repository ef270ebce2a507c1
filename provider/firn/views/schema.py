"""Column aliases and comments of a view, as the view spec stores them: in the schema.

For ``CREATE VIEW event_agg (event_count COMMENT 'Count of events', event_date) AS SELECT
COUNT(1), CAST(event_ts AS DATE) ...`` the spec ("SQL representation") says the aliases
``event_count`` and ``event_date`` and the comment must be part of the version's schema: the
aliases are the top-level field names and the comments their ``doc``. (An early draft of the
spec, seed 002, kept ``field-aliases`` and ``field-docs`` lists in the representation; the
released spec dropped them.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from firn.errors import ValidationError
from firn.spec.schema import Schema


def with_field_aliases(
    schema: Schema, aliases: Sequence[str], docs: Sequence[str | None] | None = None
) -> Schema:
    """``schema`` with its top-level fields renamed to ``aliases`` and, if given, documented
    with ``docs`` (``None`` for a column without a comment). Field ids and types are kept."""
    fields = schema.fields
    if len(aliases) != len(fields):
        raise ValidationError(f"{len(aliases)} column aliases for a query with {len(fields)} columns")
    if docs is not None and len(docs) != len(fields):
        raise ValidationError(f"{len(docs)} column comments for a query with {len(fields)} columns")
    if any(not isinstance(a, str) or not a for a in aliases):
        raise ValidationError(f"column aliases must be non-empty strings, got {list(aliases)!r}")
    lowered = [a.lower() for a in aliases]
    if len(set(lowered)) != len(lowered):
        raise ValidationError(f"column aliases must be unique, got {list(aliases)!r}")
    renamed = []
    for i, (f, alias) in enumerate(zip(fields, aliases, strict=True)):
        doc = docs[i] if docs is not None else f.doc
        renamed.append(dataclasses.replace(f, name=alias, doc=doc))
    return Schema(*renamed, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids)


__all__ = ["with_field_aliases"]
