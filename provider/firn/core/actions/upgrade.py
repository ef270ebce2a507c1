"""Format-version upgrades (v1→v2→v3→v4). Metadata-only: files are never rewritten.

Upgrading to v3 starts row lineage at ``next-row-id`` 0 (spec "Row Lineage for Upgraded
Tables"). Upgrading to v4 keeps the current snapshot's manifest list; the first V4 commit
turns its entries into root-manifest entries pointing at the legacy Avro manifests (seed 004
"Upgrade"), so reads are identical before and after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firn.core.commit import SimpleAction
from firn.core.updates import AssertFormatVersion, TableRequirement, TableUpdate, UpgradeFormatVersion
from firn.errors import ValidationError
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import check_format_version

if TYPE_CHECKING:
    from firn.core.handle import TableHandle


def upgrade_action(table: TableHandle, format_version: int) -> SimpleAction:
    target = check_format_version(format_version)
    current = table.metadata.format_version
    if target < current:
        raise ValidationError(f"cannot downgrade {table.name} from format version {current} to {target}")

    def fn(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        if base.format_version == target:
            return [], []
        if base.format_version > target:
            raise ValidationError(f"{table.name} is already at format version {base.format_version}")
        # Types that need a newer version are fine to keep; types an older version lacks cannot exist.
        return [UpgradeFormatVersion(target)], [AssertFormatVersion(base.format_version)]

    return SimpleAction(fn)


__all__ = ["upgrade_action"]
