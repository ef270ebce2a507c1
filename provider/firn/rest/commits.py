"""Server-side commits: a REST client's updates and requirements applied to the current metadata.

Spec ``updateTable``: the requirements are checked against the table's current metadata (a
failed one is a 409, ``CommitFailedException``: the client refreshes and retries), then the
updates are applied with :func:`firn.core.metadata_builder.apply_updates` and the result is
committed through the wrapped catalog's own compare-and-swap. If another commit lands between
reading the metadata and the swap, the whole check-and-apply runs again on the new metadata:
the requirements are the client's statement of what its updates need, so they are re-checked,
never assumed.

A create transaction (``stage-create`` then a commit with ``assert-create``) builds the table's
first metadata from the updates alone, on an empty base, writes it and registers it; the
catalog's insert is what makes "the table does not exist yet" atomic.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

from firn.catalog.base import Catalog, ConfinesLocations, Identifier, IdentifierLike
from firn.core.create import SchemaLike
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.metadata_builder import apply_updates, evolve
from firn.core.metadata_io import new_metadata_location, write_metadata
from firn.core.updates import AssignUUID, TableRequirement, TableUpdate, UpgradeFormatVersion
from firn.errors import AlreadyExists, CommitConflict, CommitStateUnknown, ValidationError
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.spec.deletion_scope import DeletionScope
from firn.spec.locations import normalize_location
from firn.spec.partitioning import PARTITION_FIELD_ID_START, UNPARTITIONED
from firn.spec.sorting import UNSORTED
from firn.spec.table_metadata import TableMetadata, now_ms
from firn.spec.view_metadata import ViewMetadata
from firn.views.builder import apply_view_updates
from firn.views.metadata_io import new_view_metadata_location, view_metadata_dir, write_view_metadata
from firn.views.updates import AssertViewUUID, ViewUpdate
from firn.views.view import View

logger = logging.getLogger(__name__)

# Attempts at one commit when the catalog's swap loses to a concurrent commit.
SERVER_COMMIT_ATTEMPTS = 5


def _name(ident: Identifier) -> str:
    return ".".join(ident)


def _view_scope(ident: Identifier, metadata: ViewMetadata) -> DeletionScope:
    """The own places of a view whose new metadata file a failed commit leaves behind."""
    return DeletionScope.build(_name(ident), [metadata.location, view_metadata_dir(metadata)])


def _pause(attempt: int) -> None:
    # Short jittered pause so server threads racing for one table do not collide in lockstep.
    time.sleep(random.uniform(0, 0.01 * attempt))


def commit_table(
    catalog: Catalog,
    ident: Identifier,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
) -> CommittedMetadata:
    """Apply one ``updateTable`` request to an existing table (see the module docstring; a
    create transaction goes to :func:`create_from_updates`)."""
    for attempt in range(1, SERVER_COMMIT_ATTEMPTS + 1):
        table = catalog.load_table(ident)
        base, base_location = table.metadata, table.metadata_location
        for requirement in requirements:
            requirement.validate(base)
        new = apply_updates(base, updates)
        if new is base:
            return CommittedMetadata(base, base_location)
        try:
            return catalog.commit_table(
                ident, TableCommit(base, base_location, new, tuple(updates), tuple(requirements))
            )
        except CommitConflict:
            if attempt == SERVER_COMMIT_ATTEMPTS:
                raise
            logger.debug("commit to %s lost a race (attempt %d); re-checking", ".".join(ident), attempt)
            _pause(attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def empty_metadata(table_uuid: uuid.UUID, format_version: int = 1) -> TableMetadata:
    """The base a create transaction's updates are applied to: no schema, no spec, the unsorted
    order as order 0 (so adding it again reuses id 0, as the spec reserves 0 for it)."""
    return TableMetadata(
        format_version=format_version,
        table_uuid=table_uuid,
        location="",
        last_sequence_number=0,
        last_updated_ms=now_ms(),
        last_column_id=0,
        schemas=(),
        current_schema_id=-1,
        partition_specs=(),
        default_spec_id=-1,
        last_partition_id=PARTITION_FIELD_ID_START - 1,
        sort_orders=(UNSORTED,),
        default_sort_order_id=UNSORTED.order_id,
        properties=MappingProxyType({}),
    )


def create_from_updates(
    catalog: Catalog,
    ident: Identifier,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
    *,
    default_location: str | None = None,
    default_format_version: int = 1,
) -> CommittedMetadata:
    """Commit a create transaction: build the first metadata from ``updates``, write it, and
    register it (``AlreadyExists`` from the catalog becomes a 409 conflict). The location is
    normalised, and a catalog that confines locations is asked before the file is written.

    The format version is the one an ``upgrade-format-version`` update names, or else
    ``default_format_version`` (as Iceberg Java's ``CatalogHandlers`` does)."""
    if catalog.table_exists(ident):
        raise CommitConflict(f"commit requirement failed: table {'.'.join(ident)!r} already exists")
    for requirement in requirements:
        requirement.validate(None)
    assigned = next((u.uuid for u in updates if isinstance(u, AssignUUID)), None)
    asked = next((u.format_version for u in updates if isinstance(u, UpgradeFormatVersion)), None)
    base = empty_metadata(assigned or uuid.uuid4(), asked if asked is not None else default_format_version)
    metadata = apply_updates(base, updates)
    if not metadata.schemas or metadata.current_schema_id < 0:
        raise ValidationError("a create transaction must add a schema and make it current")
    if not metadata.partition_specs:
        metadata = evolve(metadata, partition_specs=(UNPARTITIONED,), default_spec_id=UNPARTITIONED.spec_id)
    if metadata.default_spec_id < 0:
        raise ValidationError("a create transaction that adds partition specs must set the default one")
    if not metadata.location:
        if default_location is None:
            raise ValidationError("a create transaction must set the table location (set-location)")
        metadata = evolve(metadata, location=default_location)
    clean = normalize_location(metadata.location, what=f"location of table {'.'.join(ident)!r}")
    if clean != metadata.location:
        metadata = evolve(metadata, location=clean)
    metadata.schema()  # validates the current schema id
    if isinstance(catalog, ConfinesLocations):
        catalog.check_table_places(ident, metadata)
    location = new_metadata_location(metadata, None)
    write_metadata(catalog.io, metadata, location)
    try:
        catalog.register_table(ident, location)
    except AlreadyExists as e:
        delete_quietly(catalog.io, DeletionScope.for_written(_name(ident), metadata), [location], "metadata")
        raise CommitConflict(f"commit requirement failed: {e}") from e
    return CommittedMetadata(metadata, location)


# -- views ------------------------------------------------------------------------------------
class ServedViews(Protocol):
    """What the server needs of a catalog to serve views: the view operations of Firn's SQL
    and in-memory catalogs (:class:`~firn.catalog.views.ViewCatalogMixin`)."""

    @property
    def io(self) -> FileIO: ...

    def create_view(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        sql: str | Mapping[str, str],
        dialect: str = ...,
        *,
        default_namespace: IdentifierLike | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View: ...

    def load_view(self, identifier: IdentifierLike) -> View: ...

    def view_exists(self, identifier: IdentifierLike) -> bool: ...

    def list_views(self, namespace: IdentifierLike) -> list[Identifier]: ...

    def drop_view(self, identifier: IdentifierLike, *, purge: bool = False) -> None: ...

    def rename_view(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> View: ...

    def register_view(self, identifier: IdentifierLike, metadata_location: str) -> View: ...

    def commit_view(self, identifier: IdentifierLike, expected_location: str, new_location: str) -> None: ...

    def check_view_change(
        self, identifier: IdentifierLike, base: ViewMetadata, new: ViewMetadata
    ) -> None: ...


def commit_view(
    store: ServedViews,
    ident: Identifier,
    requirements: Sequence[AssertViewUUID],
    updates: Sequence[ViewUpdate],
) -> tuple[ViewMetadata, str]:
    """Apply one ``replaceView`` request: check the requirements on the current metadata,
    replay the updates (the view builder's rules apply), write the new metadata file and swap
    the catalog's pointer; a lost swap is retried on the new metadata."""
    io = store.io
    for attempt in range(1, SERVER_COMMIT_ATTEMPTS + 1):
        view = store.load_view(ident)
        base, base_location = view.metadata, view.metadata_location
        for requirement in requirements:
            requirement.validate(base)
        metadata, applied = apply_view_updates(base, updates)
        if not applied:
            return base, base_location
        # Where the view may live is checked before its new metadata file is written there.
        store.check_view_change(ident, base, metadata)
        location = new_view_metadata_location(metadata, base_location)
        write_view_metadata(io, metadata, location)
        try:
            store.commit_view(ident, base_location, location)
        except CommitStateUnknown:
            raise  # the pointer may name the new file: keep it
        except CommitConflict:
            delete_quietly(io, _view_scope(ident, metadata), [location], "view metadata")
            if attempt == SERVER_COMMIT_ATTEMPTS:
                raise
            _pause(attempt)
            continue
        except BaseException:
            delete_quietly(io, _view_scope(ident, metadata), [location], "view metadata")
            raise
        return metadata, location
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "SERVER_COMMIT_ATTEMPTS",
    "ServedViews",
    "commit_table",
    "commit_view",
    "create_from_updates",
    "empty_metadata",
]
