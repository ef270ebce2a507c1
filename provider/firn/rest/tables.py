"""Table routes (spec "Catalog API": listTables ... renameTable, reportMetrics)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from firn.catalog.base import ConfinesLocations, Identifier
from firn.catalog.rest import protocol as p
from firn.core.create import new_table_metadata
from firn.core.updates import AssertCreate, requirement_from_json, update_from_json
from firn.errors import (
    AlreadyExists,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    NoSuchNamespace,
    NoSuchTable,
    ValidationError,
)
from firn.rest import commits
from firn.rest.errors import RestError
from firn.rest.models import (
    CommitTableRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameRequest,
    ReportMetricsRequest,
)
from firn.rest.routing import StrictJsonRoute
from firn.rest.state import (
    ServerState,
    check_identifier,
    default_format_version,
    identifiers_body,
    namespace_param,
    paginate,
    parse,
    table_result,
)
from firn.spec.locations import normalize_location
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.schema_json import partition_spec_from_json, schema_from_json, sort_order_from_json
from firn.spec.sorting import SortOrder
from firn.spec.transforms import UnknownTransform

# The fields of each report kind (spec ScanReport / CommitReport); the reports are not stored.
_METRICS_REPORTS = {
    "scan-report": frozenset(
        {
            "table-name",
            "snapshot-id",
            "filter",
            "schema-id",
            "projected-field-ids",
            "projected-field-names",
            "metrics",
            "metadata",
        }
    ),
    "commit-report": frozenset(
        {"table-name", "snapshot-id", "sequence-number", "operation", "metrics", "metadata"}
    ),
}


def table_routes(state: ServerState) -> APIRouter:
    router = APIRouter(route_class=StrictJsonRoute)
    catalog = state.catalog

    def default_location(ident: Identifier) -> str | None:
        """Where the catalog would put the table (None if it cannot say)."""
        locate = getattr(catalog, "default_table_location", None)
        if not callable(locate):
            return None
        try:
            return str(locate(ident))
        except ValidationError:  # no warehouse and no namespace location
            return None

    @router.get(f"/{p.TABLES}", operation_id="listTables")
    def list_tables(
        namespace: str,
        page_token: str | None = Query(None, alias="pageToken"),
        page_size: int | None = Query(None, alias="pageSize", ge=1),
    ) -> dict[str, Any]:
        page, token = paginate(catalog.list_tables(namespace_param(namespace)), page_token, page_size)
        return identifiers_body(page, token)

    @router.post(f"/{p.TABLES}", operation_id="createTable")
    def create_table(namespace: str, body: CreateTableRequest, request: Request) -> Response:
        ns = namespace_param(namespace)
        ident = (*ns, body.name)
        schema: Schema = parse("schema", schema_from_json, body.schema_)
        spec: PartitionSpec | None = (
            parse("partition-spec", partition_spec_from_json, body.partition_spec)
            if body.partition_spec
            else None
        )
        order: SortOrder | None = (
            parse("write-order", sort_order_from_json, body.write_order) if body.write_order else None
        )
        for what, fields in (
            ("partition-spec", spec.fields if spec else ()),
            ("write-order", order.fields if order else ()),
        ):
            for f in fields:
                # Readers keep unknown transforms (spec), but a new table cannot be written with one.
                if isinstance(f.transform, UnknownTransform):
                    raise ValidationError(f"invalid {what}: unknown transform {str(f.transform)!r}")
        # Catalog-level table defaults (Iceberg's table-default.*): the request's own win.
        properties = {**state.table_defaults, **body.properties}
        if body.stage_create:
            # Spec: a staged create returns the initial metadata without creating the table;
            # the commit route creates it (assert-create) from the client's updates.
            if not catalog.namespace_exists(ns):
                raise NoSuchNamespace(f"cannot create table {'.'.join(ident)!r}: namespace does not exist")
            if catalog.table_exists(ident):
                raise AlreadyExists(f"table {'.'.join(ident)!r} already exists")
            location = body.location or default_location(ident)
            if not location:
                raise RestError(
                    400, p.BAD_REQUEST, "a staged create needs a location: the catalog has no default"
                )
            metadata = new_table_metadata(
                schema,
                location=normalize_location(location, what=f"location of table {'.'.join(ident)!r}"),
                partition_spec=spec,
                sort_order=order,
                properties=properties,
            )
            if isinstance(catalog, ConfinesLocations):
                # Refused now rather than at the create transaction's commit.
                catalog.check_table_places(ident, metadata)
            return table_result(metadata, None, state.config_for(ident, metadata, request))
        table = catalog.create_table(
            ident,
            schema,
            location=body.location,
            partition_spec=spec,
            sort_order=order,
            properties=properties,
        )
        return table_result(
            table.metadata, table.metadata_location, state.config_for(ident, table.metadata, request)
        )

    @router.get(f"/{p.TABLE}", operation_id="loadTable")
    def load_table(namespace: str, table: str, request: Request, snapshots: str | None = None) -> Response:
        # Every snapshot is always returned: a superset of what "refs" asks for.
        if snapshots not in (None, "all", "refs"):
            raise RestError(400, p.BAD_REQUEST, f"snapshots must be 'all' or 'refs', got {snapshots!r}")
        ident = (*namespace_param(namespace), table)
        loaded = catalog.load_table(ident)
        return table_result(
            loaded.metadata, loaded.metadata_location, state.config_for(ident, loaded.metadata, request)
        )

    @router.head(f"/{p.TABLE}", status_code=204, operation_id="tableExists")
    def table_exists(namespace: str, table: str) -> Response:
        ident = (*namespace_param(namespace), table)
        if not catalog.table_exists(ident):
            raise NoSuchTable(f"table {'.'.join(ident)!r} does not exist")
        return Response(status_code=204)

    @router.post(f"/{p.TABLE}", operation_id="updateTable")
    def update_table(namespace: str, table: str, body: CommitTableRequest) -> Response:
        ns = namespace_param(namespace)
        check_identifier(body.identifier, ns, table)
        requirements = [requirement_from_json(r) for r in body.requirements]
        updates = [update_from_json(u) for u in body.updates]
        ident = (*ns, table)
        try:
            if any(isinstance(r, AssertCreate) for r in requirements):
                committed = commits.create_from_updates(
                    catalog,
                    ident,
                    requirements,
                    updates,
                    default_location=default_location(ident),
                    default_format_version=default_format_version(state.table_defaults),
                )
            else:
                committed = commits.commit_table(catalog, ident, requirements, updates)
        except FirnError:
            raise
        except Exception as e:
            # Spec "updateTable": an unknown server-side problem leaves the commit state unknown.
            raise CommitStateUnknown(f"commit to {'.'.join(ident)!r} failed unexpectedly: {e}") from e
        return table_result(committed.metadata, committed.metadata_location)

    @router.delete(f"/{p.TABLE}", status_code=204, operation_id="dropTable")
    def drop_table(
        namespace: str, table: str, purge: bool = Query(False, alias="purgeRequested")
    ) -> Response:
        catalog.drop_table((*namespace_param(namespace), table), purge=purge)
        return Response(status_code=204)

    @router.post(f"/{p.REGISTER_TABLE}", operation_id="registerTable")
    def register_table(namespace: str, body: RegisterTableRequest, request: Request) -> Response:
        ident = (*namespace_param(namespace), body.name)
        if body.overwrite and catalog.table_exists(ident):
            raise RestError(
                406, p.UNSUPPORTED, "registering over an existing table (overwrite=true) is not supported"
            )
        try:
            registered = catalog.register_table(ident, body.metadata_location)
        except InvalidMetadata as e:
            raise RestError(400, p.BAD_REQUEST, f"cannot register {'.'.join(ident)!r}: {e}") from e
        return table_result(
            registered.metadata,
            registered.metadata_location,
            state.config_for(ident, registered.metadata, request),
        )

    @router.post(f"/{p.TABLE_METRICS}", status_code=204, operation_id="reportMetrics")
    def report_metrics(namespace: str, table: str, body: ReportMetricsRequest) -> Response:
        ident = (*namespace_param(namespace), table)
        allowed = _METRICS_REPORTS.get(body.report_type)
        if allowed is None:
            raise RestError(400, p.BAD_REQUEST, f"report-type must be one of {sorted(_METRICS_REPORTS)}")
        unknown = sorted(set(body.model_extra or {}) - allowed)
        if unknown:
            raise RestError(400, p.BAD_REQUEST, f"unknown field(s) {unknown} in a {body.report_type}")
        if not catalog.table_exists(ident):
            raise NoSuchTable(f"table {'.'.join(ident)!r} does not exist")
        return Response(status_code=204)

    @router.post(f"/{p.RENAME_TABLE}", status_code=204, operation_id="renameTable")
    def rename_table(body: RenameRequest) -> Response:
        catalog.rename_table(
            (*body.source.namespace, body.source.name), (*body.destination.namespace, body.destination.name)
        )
        return Response(status_code=204)

    @router.post(f"/{p.TRANSACTIONS_COMMIT}", operation_id="commitTransaction")
    def commit_transaction() -> Response:
        raise RestError(
            406,
            p.UNSUPPORTED,
            "multi-table transactions are not supported: the catalog commits one table at a time",
        )

    return router


__all__ = ["table_routes"]
