"""Partition evolution (spec "Partition Evolution").

``with table.update_spec() as u: u.add_field("ts", "hour"); u.remove_field("ts_day")``.
New fields get ids after ``last-partition-id`` unless an equivalent field (same source and
transform) existed in an earlier spec, whose id is reused. v1 tables keep removed fields as
``void`` so positions never shift.
"""

from __future__ import annotations

from firn.core.commit import CommitContext, PendingUpdate, Staging
from firn.core.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    SetDefaultSpec,
    TableRequirement,
    TableUpdate,
)
from firn.errors import ValidationConflict, ValidationError
from firn.spec.partitioning import (
    PartitionField,
    PartitionSpec,
    default_partition_field_name,
    parse_known_transform,
    validate_spec,
)
from firn.spec.table_metadata import TableMetadata
from firn.spec.transforms import Transform, parse_transform
from firn.spec.versions import MIN_FORMAT_VERSION_TRACKED_PARTITION_FIELD_IDS


class UpdateSpec(PendingUpdate):
    """Accumulates partition-spec changes and commits them as a new default spec."""

    def __init__(self, transaction: Staging, *, case_sensitive: bool = True) -> None:
        super().__init__(transaction)
        self._base = transaction.table.metadata
        self._case_sensitive = case_sensitive
        self._fields: list[PartitionField] = list(self._base.spec().fields)
        self._last_partition_id = self._base.last_partition_id
        self._changed = False

    def _existing_id(self, source_id: int, transform: Transform) -> int | None:
        for spec in self._base.partition_specs:
            for f in spec.fields:
                if f.source_id == source_id and f.transform == transform:
                    return f.field_id
        return None

    def add_field(
        self, source_column: str, transform: str | Transform = "identity", name: str | None = None
    ) -> UpdateSpec:
        schema = self._base.schema()
        src = schema.find_field_or_none(source_column, case_sensitive=self._case_sensitive)
        if src is None:
            raise ValidationError(f"cannot partition by unknown column {source_column!r}")
        t = parse_known_transform(transform) if isinstance(transform, str) else transform
        if not t.can_transform(src.field_type):
            raise ValidationError(f"transform {t} cannot apply to {source_column!r} of type {src.field_type}")
        for f in self._fields:
            if f.source_id == src.field_id and f.transform == t:
                raise ValidationError(f"the spec already has {t}({source_column}) as {f.name!r}")
        field_id = self._existing_id(src.field_id, t)
        if field_id is None or any(f.field_id == field_id for f in self._fields):
            self._last_partition_id += 1
            field_id = self._last_partition_id
        new_name = name or default_partition_field_name(
            t, schema.find_column_name(src.field_id) or source_column
        )
        if any(f.name == new_name for f in self._fields):
            raise ValidationError(f"partition field name {new_name!r} is already used")
        self._fields.append(PartitionField(src.field_id, field_id, t, new_name))
        self._changed = True
        return self

    def remove_field(self, name: str) -> UpdateSpec:
        idx = next((i for i, f in enumerate(self._fields) if f.name == name), None)
        if idx is None:
            raise ValidationError(f"no partition field {name!r}; fields are {[f.name for f in self._fields]}")
        f = self._fields[idx]
        if self._base.format_version < MIN_FORMAT_VERSION_TRACKED_PARTITION_FIELD_IDS:
            # v1 readers rely on positions: replace with void instead of dropping (spec).
            self._fields[idx] = PartitionField(f.source_id, f.field_id, parse_transform("void"), f.name)
        else:
            del self._fields[idx]
        self._changed = True
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        idx = next((i for i, f in enumerate(self._fields) if f.name == name), None)
        if idx is None:
            raise ValidationError(f"no partition field {name!r}")
        if any(f.name == new_name for f in self._fields):
            raise ValidationError(f"partition field name {new_name!r} is already used")
        f = self._fields[idx]
        self._fields[idx] = PartitionField(f.source_id, f.field_id, f.transform, new_name, f.source_ids)
        self._changed = True
        return self

    def apply_spec(self) -> PartitionSpec:
        spec = PartitionSpec(self._base.default_spec_id, tuple(self._fields))
        validate_spec(spec, self._base.schema())
        return spec

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        if (
            base.default_spec_id != self._base.default_spec_id
            or base.last_partition_id != self._base.last_partition_id
        ):
            raise ValidationConflict(
                f"the partition spec of {self.table.name} changed concurrently; reload and retry"
            )
        if not self._changed:
            return [], []
        spec = self.apply_spec()
        return (
            [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)],
            [
                AssertDefaultSpecId(self._base.default_spec_id),
                AssertLastAssignedPartitionId(self._base.last_partition_id),
            ],
        )


__all__ = ["UpdateSpec"]
