"""firn.manifests: v1-v3 Avro manifests and manifest lists (readers, writers, inheritance, cache).

V4 Parquet root and leaf manifests live in their own modules of this package.
"""

from firn.manifests.cache import clear_caches, configure_caches
from firn.manifests.inheritance import assign_first_row_ids, assign_sequence_numbers
from firn.manifests.manifest import ManifestWriter, read_manifest, read_manifest_metadata, write_manifest
from firn.manifests.manifest_list import ManifestListResult, read_manifest_list, write_manifest_list

__all__ = [
    "ManifestListResult",
    "ManifestWriter",
    "assign_first_row_ids",
    "assign_sequence_numbers",
    "clear_caches",
    "configure_caches",
    "read_manifest",
    "read_manifest_list",
    "read_manifest_metadata",
    "write_manifest",
    "write_manifest_list",
]
