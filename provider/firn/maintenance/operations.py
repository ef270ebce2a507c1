"""The names of the maintenance operations, in one place.

``table.maintenance.<method>(**options)`` is how every operation is reached. The CLI
(``firn maintain <name>``) and the Spark job (``spark-submit ... <name>``) use short names;
:data:`SHORT_NAMES` maps them to methods, and :func:`resolve` picks the method for a table
(on v2 tables, which have no deletion vectors, ``rewrite-dvs`` runs
``rewrite_position_delete_files``) and fails clearly when this build of Firn lacks it.
"""

from __future__ import annotations

from typing import Any

from firn.errors import Unsupported, ValidationError
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS

REWRITE_DELETION_VECTORS = "rewrite_deletion_vectors"
REWRITE_POSITION_DELETE_FILES = "rewrite_position_delete_files"
REWRITE_DATA_FILES = "rewrite_data_files"
FLUSH_ROOT = "flush_root"
REWRITE_MANIFESTS = "rewrite_manifests"
EXPIRE_SNAPSHOTS = "expire_snapshots"
REMOVE_ORPHAN_FILES = "remove_orphan_files"

# The order a nightly run takes (and ``recommend()`` lists): deletes are merged before
# compaction so it reads fewer delete files; compaction before the flush and the manifest
# rewrite, which then see its output; expiry after them, so the files they replaced are freed
# the same night; orphans last (Iceberg's maintenance guide: expire, then orphans, with
# compaction first freeing more files).
NIGHTLY_ORDER = (
    REWRITE_DELETION_VECTORS,
    REWRITE_DATA_FILES,
    FLUSH_ROOT,
    REWRITE_MANIFESTS,
    EXPIRE_SNAPSHOTS,
    REMOVE_ORPHAN_FILES,
)

# Short names (CLI subcommands, Spark job operations) -> ``table.maintenance`` methods.
SHORT_NAMES = {
    "rewrite-dvs": REWRITE_DELETION_VECTORS,
    "compact": REWRITE_DATA_FILES,
    "flush": FLUSH_ROOT,
    "rewrite-manifests": REWRITE_MANIFESTS,
    "expire": EXPIRE_SNAPSHOTS,
    "orphans": REMOVE_ORPHAN_FILES,
}
SHORT_NAME_OF = {method: short for short, method in SHORT_NAMES.items()}

# Operations that have another method on tables below a format version.
_BELOW_DELETION_VECTORS = {REWRITE_DELETION_VECTORS: REWRITE_POSITION_DELETE_FILES}


def method_name(operation: str, format_version: int) -> str:
    """The ``table.maintenance`` method that runs ``operation`` (a method or short name) on a
    table of ``format_version``."""
    method = SHORT_NAMES.get(operation, operation)
    if method not in SHORT_NAME_OF and method != REWRITE_POSITION_DELETE_FILES:
        known = ", ".join([*SHORT_NAMES, *NIGHTLY_ORDER])
        raise ValidationError(f"unknown maintenance operation {operation!r}; known: {known}")
    if format_version < MIN_FORMAT_VERSION_DELETION_VECTORS:
        method = _BELOW_DELETION_VECTORS.get(method, method)
    return method


def resolve(maintenance: object, operation: str, format_version: int, options: dict[str, Any]) -> Any:
    """``maintenance.<method>(**options)`` for ``operation`` (see :func:`method_name`);
    ``Unsupported`` when this build has no such method."""
    method = method_name(operation, format_version)
    factory = getattr(maintenance, method, None)
    if factory is None or not callable(factory):
        raise Unsupported(f"table.maintenance.{method} is not available in this build of firn")
    return factory(**options)


__all__ = [
    "EXPIRE_SNAPSHOTS",
    "FLUSH_ROOT",
    "NIGHTLY_ORDER",
    "REMOVE_ORPHAN_FILES",
    "REWRITE_DATA_FILES",
    "REWRITE_DELETION_VECTORS",
    "REWRITE_MANIFESTS",
    "REWRITE_POSITION_DELETE_FILES",
    "SHORT_NAMES",
    "SHORT_NAME_OF",
    "method_name",
    "resolve",
]
