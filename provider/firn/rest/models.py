"""Request bodies of the REST spec as strict pydantic models.

Strict: a field of the wrong JSON type is not coerced, and a field the spec does not define is
refused (``extra="forbid"``), so a client's typo gets a 400 naming it instead of being
silently ignored. Embedded Iceberg objects (schemas, specs, view versions, updates) stay
plain JSON here and are read by Firn's own strict readers, which also answer 400.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


class TableIdentifierModel(_Request):
    namespace: list[str]
    name: str


class CreateNamespaceRequest(_Request):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(_Request):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class RenameRequest(_Request):
    source: TableIdentifierModel
    destination: TableIdentifierModel


class CreateTableRequest(_Request):
    name: str
    location: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    partition_spec: dict[str, Any] | None = Field(default=None, alias="partition-spec")
    write_order: dict[str, Any] | None = Field(default=None, alias="write-order")
    stage_create: bool = Field(default=False, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)


class RegisterTableRequest(_Request):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False


class CommitTableRequest(_Request):
    identifier: TableIdentifierModel | None = None
    requirements: list[dict[str, Any]]
    updates: list[dict[str, Any]]


class CreateViewRequest(_Request):
    name: str
    location: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    view_version: dict[str, Any] = Field(alias="view-version")
    properties: dict[str, str]


class CommitViewRequest(_Request):
    identifier: TableIdentifierModel | None = None
    requirements: list[dict[str, Any]] = Field(default_factory=list)
    updates: list[dict[str, Any]]


class RegisterViewRequest(_Request):
    name: str
    metadata_location: str = Field(alias="metadata-location")


class ReportMetricsRequest(BaseModel):
    """A scan or commit report: only its kind is checked; the server records nothing."""

    model_config = ConfigDict(extra="allow", strict=True)
    report_type: str = Field(alias="report-type")


__all__ = [
    "CommitTableRequest",
    "CommitViewRequest",
    "CreateNamespaceRequest",
    "CreateTableRequest",
    "CreateViewRequest",
    "RegisterTableRequest",
    "RegisterViewRequest",
    "RenameRequest",
    "ReportMetricsRequest",
    "TableIdentifierModel",
    "UpdateNamespacePropertiesRequest",
]
