"""JSON for the frozen dataclasses of maintenance: plans, work-unit payloads and results.

Plans and results travel as JSON (XCom, asset-event extras, Spark job result files, a plan
made by an Airflow task and run by a Spark job), so each is a frozen dataclass whose fields
are JSON-shaped: ``int``, ``float``, ``str``, ``bool``, ``None``, ``tuple[X, ...]``,
``dict[str, X]``, ``Any`` (plain JSON) and nested dataclasses. :func:`to_jsonable` and
:func:`from_jsonable` convert by the field types, so a value round-trips exactly.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from firn.errors import ValidationError

T = TypeVar("T")


class JsonCodec(ABC):
    """A value with its own JSON shape (options: Iceberg's hyphenated names, not field names)."""

    @abstractmethod
    def to_json_data(self) -> Any:
        """This value as plain JSON data."""

    @classmethod
    @abstractmethod
    def from_json_data(cls, data: Any, where: str) -> Any:
        """The value :meth:`to_json_data` gave ``data`` for; a ``ValidationError`` naming
        ``where`` when it cannot be."""


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dataclasses become objects with their field names)."""
    if isinstance(value, JsonCodec):
        return to_jsonable(value.to_json_data())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(cls: type[T], data: Any, *, where: str = "") -> T:
    """Rebuild a dataclass of type ``cls`` from :func:`to_jsonable` output; a missing or
    mistyped field is a ``ValidationError`` naming it."""
    return typing.cast(T, _decode(cls, data, where or cls.__name__))


def _decode(tp: Any, data: Any, where: str) -> Any:
    if tp is Any:
        return data
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, data, where)
            except ValidationError as e:
                errors.append(str(e))
        raise ValidationError(f"{where}: {data!r} matches none of {tp}: {'; '.join(errors)}")
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list | tuple):
            raise ValidationError(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(args) != len(data):
            raise ValidationError(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data)))
    if origin in (dict, Mapping, typing.Mapping):
        _, value_type = typing.get_args(tp) or (str, Any)
        if not isinstance(data, Mapping):
            raise ValidationError(f"{where}: expected an object, got {type(data).__name__}")
        return {str(k): _decode(value_type, v, f"{where}.{k}") for k, v in data.items()}
    if isinstance(tp, type) and issubclass(tp, JsonCodec):
        return tp.from_json_data(data, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, Mapping):
            raise ValidationError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            if f.name in data:
                kwargs[f.name] = _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValidationError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise ValidationError(f"{where}: {data!r} is not a valid {tp.__name__}") from None
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if tp in (int, str, bool, float):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise ValidationError(f"{where}: expected {tp.__name__}, got {data!r}")
        return data
    if tp is type(None):
        if data is not None:
            raise ValidationError(f"{where}: expected null, got {data!r}")
        return None
    raise ValidationError(f"{where}: cannot decode type {tp}")


__all__ = ["JsonCodec", "from_jsonable", "to_jsonable"]
