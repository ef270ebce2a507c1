"""firn.views: Iceberg views (the view spec) — metadata operations, files and the View object.

The metadata model and its JSON are in :mod:`firn.spec.view_metadata` and
:mod:`firn.spec.view_metadata_json`; the catalogs' view operations are in
:mod:`firn.catalog.views`.
"""

from firn.views.builder import (
    ViewMetadataBuilder,
    apply_view_updates,
    new_view_metadata,
    replace_view_version,
    rollback_view_version,
    sql_representations,
    update_view_properties,
)
from firn.views.metadata_io import new_view_metadata_location, read_view_metadata, write_view_metadata
from firn.views.schema import with_field_aliases
from firn.views.view import View, ViewCatalog

__all__ = [
    "View",
    "ViewCatalog",
    "ViewMetadataBuilder",
    "apply_view_updates",
    "new_view_metadata",
    "new_view_metadata_location",
    "read_view_metadata",
    "replace_view_version",
    "rollback_view_version",
    "sql_representations",
    "update_view_properties",
    "with_field_aliases",
    "write_view_metadata",
]
