"""Partition transforms (spec: "Partition Transforms", "Bucket Transform Details",
"Truncate Transform Details", Appendix B).

INTERFACE STUB — the implementation is being written; the class names, constructors and
method signatures below are the contract other modules code against.

Values use Firn's internal representation (see ``firn.spec.values``): date = days since
epoch (int), time = µs since midnight (int), timestamp/timestamptz = µs since epoch (int),
timestamp_ns/timestamptz_ns = ns since epoch (int), decimal = ``decimal.Decimal``,
uuid = ``uuid.UUID``, fixed/binary = ``bytes``, string = ``str``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import pyarrow as pa

from firn.spec.types import IcebergType


class Transform(ABC):
    """A partition or sort transform. Immutable, hashable, ``str()`` is the spec spelling."""

    @abstractmethod
    def can_transform(self, source: IcebergType) -> bool:
        """Whether this transform accepts values of ``source`` type."""

    @abstractmethod
    def result_type(self, source: IcebergType) -> IcebergType:
        """The type of transformed values for a ``source`` column."""

    @abstractmethod
    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one internal-representation value (None maps to None)."""

    @abstractmethod
    def apply_arrow(self, source: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Vectorized :meth:`apply` over an Arrow array of the source column."""

    @property
    def preserves_order(self) -> bool:
        return False

    @property
    def is_identity(self) -> bool:
        return False

    @property
    def is_void(self) -> bool:
        return False

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """Java's human-readable partition value (e.g. ``2017-11-16`` for day)."""
        raise NotImplementedError


def parse_transform(text: str) -> Transform:
    """Parse ``identity``, ``bucket[N]``, ``truncate[W]``, ``year``…``hour``, ``void``;
    anything else becomes an :class:`UnknownTransform` (v3 readers must tolerate them)."""
    raise NotImplementedError
