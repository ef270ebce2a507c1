"""Where a table's new data files go (spec "File System Operations" and ``write.data.path``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from firn.spec.properties import WRITE_DATA_PATH
from firn.spec.table_metadata import TableMetadata

DATA_DIR = "data"


class LocationProvider(Protocol):
    """Where new data files go."""

    def new_data_location(self, file_name: str, partition_path: str | None = None) -> str:
        """The full location of a data file named ``file_name`` in a partition directory."""
        ...


@dataclass(frozen=True, slots=True)
class DefaultLocationProvider:
    """``<write.data.path or <table location>/data>/<partition path>/<file name>`` (as Java)."""

    data_path: str

    @classmethod
    def for_table(cls, metadata: TableMetadata) -> DefaultLocationProvider:
        configured = metadata.properties.get(WRITE_DATA_PATH)
        base = str(configured) if configured else f"{metadata.location.rstrip('/')}/{DATA_DIR}"
        return cls(base.rstrip("/"))

    def new_data_location(self, file_name: str, partition_path: str | None = None) -> str:
        if partition_path:
            return f"{self.data_path}/{partition_path}/{file_name}"
        return f"{self.data_path}/{file_name}"


__all__ = ["DATA_DIR", "DefaultLocationProvider", "LocationProvider"]
