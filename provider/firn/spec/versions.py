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
MIN_FORMAT_VERSION_DELETION_VECTORS = 3
MIN_FORMAT_VERSION_ROW_LINEAGE = 3
MIN_FORMAT_VERSION_NANO_TIMESTAMPS = 3
MIN_FORMAT_VERSION_MULTI_ARG_TRANSFORMS = 3
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
