"""Format versions and the feature gates that depend on them (DESIGN: "versions at the edge").

Code asks ``version >= MIN_FORMAT_VERSION_X`` through these names, never with bare numbers.
"""

from __future__ import annotations

from firn.errors import Unsupported

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3, 4)
MAX_SUPPORTED_FORMAT_VERSION = 4
# Firn's default for new tables (issue 4: V4 is the default unless asked otherwise).
DEFAULT_FORMAT_VERSION = 4

MIN_FORMAT_VERSION_ROW_LEVEL_DELETES = 2
MIN_FORMAT_VERSION_SEQUENCE_NUMBERS = 2
MIN_FORMAT_VERSION_REFS = 2
# v2 requires table-uuid (optional in v1, spec "Table Metadata Fields").
MIN_FORMAT_VERSION_REQUIRED_TABLE_UUID = 2
# v1 metadata also carries the current schema and partition spec as the deprecated single
# ``schema`` and ``partition-spec`` fields; from v2 on only the lists are written.
MIN_FORMAT_VERSION_LISTS_ONLY = 2
# v1 partition fields are positional: ids run 1000, 1001, ... in spec order and a removed
# field is replaced by a void transform (spec "Partition Evolution"); v2 tracks field ids.
MIN_FORMAT_VERSION_TRACKED_PARTITION_FIELD_IDS = 2
MIN_FORMAT_VERSION_DELETION_VECTORS = 3
MIN_FORMAT_VERSION_ROW_LINEAGE = 3
MIN_FORMAT_VERSION_NANO_TIMESTAMPS = 3
MIN_FORMAT_VERSION_MULTI_ARG_TRANSFORMS = 3
# v3 types (spec "Primitive Types", "Semi-structured Types"): unknown, variant, geometry, geography.
MIN_FORMAT_VERSION_UNKNOWN_TYPE = 3
MIN_FORMAT_VERSION_VARIANT_TYPE = 3
MIN_FORMAT_VERSION_GEO_TYPES = 3
# Column default values (``initial-default`` / ``write-default``) and the v3 type promotions
# (date to timestamp, unknown to any type; spec "Schema Evolution").
MIN_FORMAT_VERSION_DEFAULT_VALUES = 3
MIN_FORMAT_VERSION_DATE_PROMOTION = 3
# V4 (seed 004): a root manifest per snapshot instead of a manifest list.
MIN_FORMAT_VERSION_ROOT_MANIFEST = 4
# Java writes current-snapshot-id -1 for "none" before v3 and null from v3 on.
MIN_FORMAT_VERSION_NULL_CURRENT_SNAPSHOT = 3


def check_format_version(version: object, *, location: str | None = None) -> int:
    """Validate a format version read from metadata or given by a user."""
    where = f"{location}: " if location else ""
    if isinstance(version, str) and version.strip().isdigit():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise Unsupported(f"{where}format-version must be an integer, got {version!r}")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise Unsupported(
            f"{where}unsupported table format version {version}; Firn supports "
            f"{', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}"
        )
    return version


__all__ = [name for name in dir() if name.isupper() or name == "check_format_version"]
