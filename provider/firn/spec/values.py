"""Single-value serialization (spec Appendix D) and Firn's internal value representation.

INTERFACE STUB — being implemented; signatures are the contract.

Internal representation of values of each type (used in partition tuples, bounds, defaults,
literals after binding):

    boolean -> bool            int, long -> int           float, double -> float
    decimal -> decimal.Decimal date -> int (days since 1970-01-01)
    time -> int (µs since midnight)                       timestamp, timestamptz -> int (µs since epoch, UTC)
    timestamp_ns, timestamptz_ns -> int (ns since epoch)   string -> str
    uuid -> uuid.UUID          fixed, binary -> bytes     unknown -> None
"""

from __future__ import annotations

from typing import Any

from firn.spec.types import IcebergType


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """Appendix D binary form of an internal value."""
    raise NotImplementedError


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Decode Appendix D binary, inferring the written type from the length after promotion."""
    raise NotImplementedError


def to_json(t: IcebergType, value: Any) -> Any:
    """Appendix D JSON single-value form."""
    raise NotImplementedError


def from_json(t: IcebergType, data: Any) -> Any:
    raise NotImplementedError


def to_internal(t: IcebergType, value: Any) -> Any:
    """Convert a user value (``datetime``, ``date``, ISO strings, ``Decimal``...) to internal form."""
    raise NotImplementedError


def to_python(t: IcebergType, value: Any) -> Any:
    """Convert an internal value to the natural Python object (``date``, ``datetime``...)."""
    raise NotImplementedError
