"""Terms of predicates: named references (unbound) and field references (bound).

An unbound :class:`Reference` names a column by its (possibly dotted) name as a user wrote
it. Binding against a schema resolves it to a :class:`BoundReference` that carries the
field (id and type), the path of names from the root (so Arrow can find the column) and
whether the value can ever be null (the field *and* every enclosing struct are required).
"""

from __future__ import annotations

from dataclasses import dataclass

from firn.spec.types import DoubleType, FloatType, IcebergType, NestedField


@dataclass(frozen=True, slots=True)
class Reference:
    """An unbound reference to a column by name (dotted for nested struct fields)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A reference resolved against a schema (or a partition struct).

    ``path`` holds the field names from the root struct down to the field, so names that
    themselves contain dots stay unambiguous. ``never_null`` is true only when the field and
    all of its enclosing structs are required: a required field inside an optional struct is
    still null whenever its parent is.
    """

    field: NestedField
    path: tuple[str, ...]
    never_null: bool = False

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def field_type(self) -> IcebergType:
        return self.field.field_type

    @property
    def name(self) -> str:
        """The dotted column name (for messages and logs)."""
        return ".".join(self.path)

    @property
    def is_floating(self) -> bool:
        """Whether values may be NaN (only ``float`` and ``double`` can)."""
        return isinstance(self.field.field_type, FloatType | DoubleType)

    def __str__(self) -> str:
        return self.name


__all__ = ["BoundReference", "Reference"]
