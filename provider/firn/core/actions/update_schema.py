"""Schema evolution (spec "Schema Evolution"): add, drop, rename, promote, require, reorder.

Use through ``table.update_schema()``::

    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("ts", "event_ts")
        update.update_column("count", LongType())

Every change is validated against the spec's rules and raises ``ValidationError`` naming the
column; the new schema gets fresh ids above ``last-column-id``. Field ids never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from firn.core.commit import CommitContext, PendingUpdate, Staging
from firn.core.updates import (
    LAST_ADDED,
    AddSchema,
    AssertCurrentSchemaId,
    SetCurrentSchema,
    TableRequirement,
    TableUpdate,
)
from firn.errors import ValidationConflict, ValidationError
from firn.spec.schema import Schema
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    can_promote,
)
from firn.spec.versions import MIN_FORMAT_VERSION_DATE_PROMOTION, MIN_FORMAT_VERSION_DEFAULT_VALUES

ROOT = -1  # parent id of top-level columns


@dataclass
class _Pending:
    adds: dict[int, list[NestedField]]
    deletes: set[int]
    updates: dict[int, NestedField]
    moves: dict[int, list[tuple[str, int, int | None]]]
    identifier_names: list[str] | None


class UpdateSchema(PendingUpdate):
    """Accumulates schema changes and commits them as one new schema."""

    def __init__(
        self,
        transaction: Staging,
        *,
        case_sensitive: bool = True,
        allow_incompatible_changes: bool = False,
    ) -> None:
        super().__init__(transaction)
        self._base = transaction.table.metadata
        self._schema = self._base.schema()
        self._format_version = self._base.format_version
        self._case_sensitive = case_sensitive
        self._allow_incompatible = allow_incompatible_changes
        self._last_column_id = self._base.last_column_id
        self._p = _Pending({}, set(), {}, {}, None)
        self._added_names: dict[tuple[int, str], int] = {}

    # -- helpers -----------------------------------------------------------------------------------
    def _find(self, name: str) -> NestedField:
        f = self._schema.find_field_or_none(name, case_sensitive=self._case_sensitive)
        if f is None:
            raise ValidationError(
                f"cannot update missing column {name!r}; columns are {self._schema.column_names}"
            )
        if f.field_id in self._p.deletes:
            raise ValidationError(f"column {name!r} is being deleted in this update")
        return f

    def _current(self, f: NestedField) -> NestedField:
        return self._p.updates.get(f.field_id, f)

    def _next_id(self) -> int:
        self._last_column_id += 1
        return self._last_column_id

    def _assign_ids(self, t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(
                *(
                    NestedField(
                        self._next_id(),
                        f.name,
                        self._assign_ids(f.field_type),
                        f.required,
                        f.doc,
                        f.initial_default,
                        f.write_default,
                    )
                    for f in t.fields
                )
            )
        if isinstance(t, ListType):
            return ListType(self._next_id(), self._assign_ids(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = self._next_id(), self._next_id()
            return MapType(
                kid, self._assign_ids(t.key_type), vid, self._assign_ids(t.value_type), t.value_required
            )
        return t

    # -- operations ---------------------------------------------------------------------------------
    def add_column(
        self,
        path: str | Sequence[str],
        field_type: IcebergType,
        *,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
    ) -> UpdateSchema:
        """Add a column (``"a.b"`` or ``("a", "b")`` adds ``b`` inside struct ``a``)."""
        parts = path.split(".") if isinstance(path, str) else list(path)
        name = parts[-1]
        parent_id = ROOT
        if len(parts) > 1:
            parent = self._find(".".join(parts[:-1]))
            pt = parent.field_type
            if isinstance(pt, MapType):
                parent = NestedField(pt.value_id, "value", pt.value_type)
                pt = pt.value_type
            elif isinstance(pt, ListType):
                parent = NestedField(pt.element_id, "element", pt.element_type)
                pt = pt.element_type
            if not isinstance(pt, StructType):
                raise ValidationError(
                    f"cannot add column {name!r} to non-struct {'.'.join(parts[:-1])!r} ({pt})"
                )
            parent_id = parent.field_id
        full = ".".join(parts)
        existing = self._schema.find_field_or_none(full, case_sensitive=self._case_sensitive)
        if existing is not None and existing.field_id not in self._p.deletes:
            raise ValidationError(f"cannot add column {full!r}: it already exists")
        if (parent_id, name) in self._added_names:
            raise ValidationError(f"column {full!r} is added twice")
        if required and default is None and not self._allow_incompatible:
            raise ValidationError(
                f"cannot add required column {full!r} without a default: existing rows have no value"
            )
        if default is not None and self._format_version < MIN_FORMAT_VERSION_DEFAULT_VALUES:
            raise ValidationError("column default values need format version 3")
        from firn.spec import values

        internal = values.to_internal(field_type, default) if default is not None else None
        new_field = NestedField(
            self._next_id(), name, self._assign_ids(field_type), required, doc, internal, internal
        )
        self._p.adds.setdefault(parent_id, []).append(new_field)
        self._added_names[(parent_id, name)] = new_field.field_id
        return self

    def delete_column(self, name: str) -> UpdateSchema:
        f = self._find(name)
        if f.field_id in self._p.adds or f.field_id in self._p.updates:
            raise ValidationError(f"cannot delete column {name!r}: it has other changes in this update")
        if f.field_id in self._schema.identifier_field_ids and self._p.identifier_names is None:
            raise ValidationError(
                f"cannot delete identifier field {name!r}; change the identifier fields first"
            )
        self._p.deletes.add(f.field_id)
        return self

    def rename_column(self, name: str, new_name: str) -> UpdateSchema:
        f = self._find(name)
        if not new_name:
            raise ValidationError("a column name cannot be empty")
        cur = self._current(f)
        self._p.updates[f.field_id] = NestedField(
            cur.field_id,
            new_name,
            cur.field_type,
            cur.required,
            cur.doc,
            cur.initial_default,
            cur.write_default,
        )
        return self

    def update_column(
        self,
        name: str,
        field_type: IcebergType | None = None,
        *,
        required: bool | None = None,
        doc: str | None = None,
    ) -> UpdateSchema:
        """Promote a primitive type, change nullability or the doc string."""
        f = self._find(name)
        cur = self._current(f)
        new_type = cur.field_type
        if field_type is not None and field_type != cur.field_type:
            if not isinstance(cur.field_type, PrimitiveType) or not isinstance(field_type, PrimitiveType):
                raise ValidationError(f"cannot change nested column {name!r} to {field_type}")
            if not can_promote(cur.field_type, field_type, self._format_version):
                raise ValidationError(
                    f"cannot change column {name!r} from {cur.field_type} to {field_type}: not a valid type "
                    "promotion (allowed: int→long, float→double, decimal precision widening"
                    + (
                        ", date→timestamp, unknown→any"
                        if self._format_version >= MIN_FORMAT_VERSION_DATE_PROMOTION
                        else ""
                    )
                    + ")"
                )
            self._check_partition_source_promotion(f, field_type)
            new_type = field_type
        new_required = cur.required
        if required is not None and required != cur.required:
            if required and not self._allow_incompatible:
                raise ValidationError(
                    f"cannot make optional column {name!r} required: existing rows may be null"
                )
            new_required = required
        self._p.updates[f.field_id] = NestedField(
            cur.field_id,
            cur.name,
            new_type,
            new_required,
            doc if doc is not None else cur.doc,
            cur.initial_default,
            cur.write_default,
        )
        return self

    def make_column_optional(self, name: str) -> UpdateSchema:
        return self.update_column(name, required=False)

    def set_identifier_fields(self, *names: str) -> UpdateSchema:
        self._p.identifier_names = list(names)
        return self

    def move_first(self, name: str) -> UpdateSchema:
        return self._move(name, "first", None)

    def move_before(self, name: str, before: str) -> UpdateSchema:
        return self._move(name, "before", before)

    def move_after(self, name: str, after: str) -> UpdateSchema:
        return self._move(name, "after", after)

    def _move(self, name: str, how: str, other: str | None) -> UpdateSchema:
        f = self._find(name)
        parent = self._schema.parent_id(f.field_id)
        other_id: int | None = None
        if other is not None:
            o = self._find(other)
            if self._schema.parent_id(o.field_id) != parent:
                raise ValidationError(
                    f"cannot move {name!r} relative to {other!r}: they are in different structs"
                )
            if o.field_id == f.field_id:
                raise ValidationError(f"cannot move {name!r} relative to itself")
            other_id = o.field_id
        self._p.moves.setdefault(parent if parent is not None else ROOT, []).append(
            (how, f.field_id, other_id)
        )
        return self

    def union_by_name(self, new_schema: Schema) -> UpdateSchema:
        """Add columns of ``new_schema`` missing here and apply allowed promotions, by name."""
        for f in new_schema.fields:
            self._union_field(f, "")
        return self

    def _union_field(self, f: NestedField, prefix: str) -> None:
        full = f"{prefix}{f.name}"
        existing = self._schema.find_field_or_none(full, case_sensitive=self._case_sensitive)
        if existing is None:
            self.add_column(full, f.field_type, doc=f.doc, required=False)
            return
        if isinstance(f.field_type, StructType) and isinstance(existing.field_type, StructType):
            for child in f.field_type.fields:
                self._union_field(child, full + ".")
        elif isinstance(f.field_type, PrimitiveType) and f.field_type != existing.field_type:
            if can_promote(existing.field_type, f.field_type, self._format_version):
                self.update_column(full, f.field_type)
            elif not can_promote(f.field_type, existing.field_type, self._format_version):
                raise ValidationError(
                    f"column {full!r} is {existing.field_type} in the table but {f.field_type} in the new schema"
                )

    def _check_partition_source_promotion(self, f: NestedField, target: IcebergType) -> None:
        # Spec: date→timestamp may not be applied to a partition source whose transform changes values.
        from firn.spec.types import DateType

        if not isinstance(f.field_type, DateType):
            return
        for spec in self._base.partition_specs:
            for pf in spec.fields:
                if pf.source_id == f.field_id and not pf.transform.is_identity:
                    raise ValidationError(
                        f"cannot promote {f.name!r} from date to {target}: partition field {pf.name!r} "
                        f"({pf.transform}) would produce different values"
                    )

    # -- building ----------------------------------------------------------------------------------
    def _rebuild_struct(self, fields: Sequence[NestedField], parent_id: int) -> list[NestedField]:
        out: list[NestedField] = []
        for f in fields:
            if f.field_id in self._p.deletes:
                continue
            cur = self._p.updates.get(f.field_id, f)
            out.append(cur.with_type(self._rebuild_type(cur.field_type, f.field_id)))
        out.extend(self._p.adds.get(parent_id, []))
        for how, fid, other in self._p.moves.get(parent_id, []):
            idx = next((i for i, x in enumerate(out) if x.field_id == fid), None)
            if idx is None:
                continue
            item = out.pop(idx)
            if how == "first":
                out.insert(0, item)
            else:
                j = next(i for i, x in enumerate(out) if x.field_id == other)
                out.insert(j if how == "before" else j + 1, item)
        names = [x.name for x in out]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValidationError(f"schema update would create duplicate column name(s) {sorted(dupes)}")
        return out

    def _rebuild_type(self, t: IcebergType, owner_id: int) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*self._rebuild_struct(t.fields, owner_id))
        if isinstance(t, ListType):
            el = self._p.updates.get(t.element_id)
            el_type = el.field_type if el else t.element_type
            el_req = el.required if el else t.element_required
            return ListType(t.element_id, self._rebuild_type(el_type, t.element_id), el_req)
        if isinstance(t, MapType):
            val = self._p.updates.get(t.value_id)
            vt = val.field_type if val else t.value_type
            vr = val.required if val else t.value_required
            return MapType(t.key_id, t.key_type, t.value_id, self._rebuild_type(vt, t.value_id), vr)
        return t

    def apply_schema(self) -> Schema:
        """The new schema this update produces (without committing)."""
        fields = self._rebuild_struct(self._schema.fields, ROOT)
        interim = Schema(*fields, schema_id=self._schema.schema_id)
        if self._p.identifier_names is not None:
            ids = [
                interim.find_field(n, case_sensitive=self._case_sensitive).field_id
                for n in self._p.identifier_names
            ]
        else:
            ids = [i for i in self._schema.identifier_field_ids if i not in self._p.deletes]
        new = Schema(*fields, schema_id=self._schema.schema_id, identifier_field_ids=ids)
        new.validate(self._format_version)
        # Partition source columns must not be dropped while a spec in use references them.
        spec = self._base.spec()
        for pf in spec.fields:
            if pf.source_id in self._p.deletes and not pf.transform.is_void:
                raise ValidationError(
                    f"cannot delete column {self._schema.find_column_name(pf.source_id)!r}: the current "
                    f"partition spec uses it ({pf.name}); remove the partition field first"
                )
        return new

    # -- action protocol ---------------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        if base.current_schema_id != self._schema.schema_id:
            raise ValidationConflict(
                f"the schema of {self.table.name} changed concurrently (schema id {self._schema.schema_id} → "
                f"{base.current_schema_id}); reload the table and retry the schema update"
            )
        new = self.apply_schema()
        if new == self._schema:
            return [], []
        return (
            [AddSchema(new, self._last_column_id), SetCurrentSchema(LAST_ADDED)],
            [AssertCurrentSchemaId(self._schema.schema_id)],
        )


__all__ = ["UpdateSchema"]
