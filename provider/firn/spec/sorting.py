"""Sort orders (spec: "Sorting", Appendix C "Sort Orders")."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from firn.errors import ValidationError
from firn.spec.schema import Schema
from firn.spec.transforms import Transform, parse_transform

# Spec: order id 0 is reserved for the unsorted order.
UNSORTED_ORDER_ID = 0


class SortDirection(enum.Enum):
    ASC = "asc"
    DESC = "desc"


class NullOrder(enum.Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True, slots=True)
class SortField:
    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST
    source_ids: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class SortOrder:
    order_id: int = UNSORTED_ORDER_ID
    fields: tuple[SortField, ...] = ()

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def same_order(self, other: SortOrder) -> bool:
        return self.fields == other.fields


UNSORTED = SortOrder(UNSORTED_ORDER_ID, ())

SortFieldLike = SortField | str | tuple[str, str] | tuple[str, str, str]


def build_sort_order(schema: Schema, fields: Iterable[SortFieldLike], *, order_id: int = 1) -> SortOrder:
    """Build a sort order from ``"col"``, ``("col", "desc")`` or ``("col", "asc", "nulls-last")`` items.

    Ascending sorts put nulls first and descending sorts nulls last, as Iceberg Java does.
    """
    out: list[SortField] = []
    for item in fields:
        if isinstance(item, SortField):
            out.append(item)
            continue
        parts: tuple[str, ...] = (item,) if isinstance(item, str) else tuple(item)
        column = parts[0]
        src = schema.find_field_or_none(column)
        if src is None:
            raise ValidationError(f"cannot sort by unknown column {column!r}")
        try:
            direction = SortDirection(parts[1].lower()) if len(parts) > 1 else SortDirection.ASC
        except ValueError as e:
            raise ValidationError(f"sort direction must be 'asc' or 'desc', got {parts[1]!r}") from e
        default_nulls = NullOrder.NULLS_FIRST if direction is SortDirection.ASC else NullOrder.NULLS_LAST
        try:
            null_order = NullOrder(parts[2].lower()) if len(parts) > 2 else default_nulls
        except ValueError as e:
            raise ValidationError(
                f"null order must be 'nulls-first' or 'nulls-last', got {parts[2]!r}"
            ) from e
        out.append(SortField(src.field_id, parse_transform("identity"), direction, null_order))
    if not out:
        return UNSORTED
    return SortOrder(order_id, tuple(out))


__all__ = [
    "UNSORTED",
    "UNSORTED_ORDER_ID",
    "NullOrder",
    "SortDirection",
    "SortField",
    "SortOrder",
    "build_sort_order",
]
