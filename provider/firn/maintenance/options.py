"""The options of each maintenance operation: one frozen dataclass per operation.

Python callers pass typed keyword arguments (``table.maintenance.rewrite_data_files(
min_input_files=2)``); the CLI, the Spark job and Iceberg users pass Iceberg's hyphenated names
(``min-input-files``, ``partial-progress.enabled``), read by :meth:`MaintenanceOptions.
from_iceberg` and written back by :meth:`MaintenanceOptions.to_iceberg`. Each default is
written once, on the field; ``None`` means "not given" (resolved by the planner, usually from a
table property, so a plan records the values it actually used). An unknown or misspelt option
is a ``ValidationError`` naming the close matches; a value of the wrong kind is one naming the
option.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from firn.errors import ValidationError
from firn.maintenance.serde import JsonCodec
from firn.spec.snapshots import MAIN_BRANCH
from firn.util.timestamps import to_timestamp_ms


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValidationError(f"option {name!r} must be true or false, got {value!r}")


def _int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise ValidationError(f"option {name!r} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"option {name!r} must be an integer, got {value!r}")


def _float(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise ValidationError(f"option {name!r} must be a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"option {name!r} must be a number, got {value!r}")


def _str(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    raise ValidationError(f"option {name!r} must be a string, got {value!r}")


def _timestamp_ms(name: str, value: object) -> int:
    """A point in time: a timezone-aware datetime, epoch milliseconds (an int, or a float such
    as ``time.time() * 1000``, truncated), or ISO-8601 text with an offset. A naive datetime,
    a date or text without an offset is refused: which instant it means depends on the machine."""
    return to_timestamp_ms(value, what=f"option {name!r}", naive="refuse")


def _int_list(name: str, value: object) -> tuple[int, ...]:
    if isinstance(value, str):
        parts = [p for p in value.replace(" ", "").split(",") if p]
        return tuple(_int(name, p) for p in parts)
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(_int(name, v) for v in value)
    raise ValidationError(f"option {name!r} must be a list of integers, got {value!r}")


def _str_list(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, list | tuple):
        return tuple(_str(name, v) for v in value)
    raise ValidationError(f"option {name!r} must be a list of strings, got {value!r}")


def _str_map(name: str, value: object) -> dict[str, str]:
    """A string map: a mapping, or its JSON object text (``{"s3a,s3n": "s3"}``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValidationError(
                f"option {name!r} must be a JSON object of strings, got {value!r}"
            ) from None
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise ValidationError(f"option {name!r} must map strings to strings, got {value!r}")


PARSERS: dict[str, Callable[[str, object], Any]] = {
    "bool": _bool,
    "int": _int,
    "float": _float,
    "str": _str,
    "timestamp": _timestamp_ms,
    "int-list": _int_list,
    "str-list": _str_list,
    "str-map": _str_map,
}

# A point in time: an aware datetime, ISO-8601 text with an offset, or epoch milliseconds.
PointInTime = dt.datetime | str | int

# Defaults Iceberg's procedures share (``SizeBasedFileRewritePlanner``, ``RewriteDataFiles``).
DEFAULT_MIN_INPUT_FILES = 5
DEFAULT_DELETE_FILE_THRESHOLD = 2**31 - 1  # Java's Integer.MAX_VALUE
DEFAULT_DELETE_RATIO_THRESHOLD = 0.3
DEFAULT_MAX_FILE_GROUP_SIZE_BYTES = 100 * 1024**3
DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS = 10
DEFAULT_MAX_CONCURRENT_GROUP_REWRITES = 5
JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
PREFIX_MISMATCH_MODES = ("ERROR", "IGNORE", "DELETE")


def option(
    doc: str,
    kind: str,
    *,
    iceberg: str | None = None,
    choices: tuple[str, ...] = (),
    negated: bool = False,
) -> dict[str, Any]:
    """The metadata of an options field (``field(default=..., metadata=option(...))``): what it
    is for, its kind (a key of :data:`PARSERS`), its Iceberg name when it is not the field name
    hyphenated, and whether the Iceberg option means its negation (orphan removal's ``delete``
    is Iceberg's ``dry-run``)."""
    return {"doc": doc, "kind": kind, "iceberg": iceberg, "choices": choices, "negated": negated}


def normalize_name(name: str) -> str:
    """An option name in Iceberg's spelling: ``min_input_files`` -> ``min-input-files``."""
    return name.strip().replace("_", "-")


@dataclass(frozen=True, kw_only=True)
class MaintenanceOptions(JsonCodec):
    """Base of the options dataclasses. Values given as text or other JSON kinds (the CLI,
    templated Airflow arguments) are parsed by the field's kind when the object is made."""

    OPERATION: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None or "kind" not in f.metadata:
                continue
            parsed = PARSERS[f.metadata["kind"]](self.iceberg_name(f.name), value)
            choices = f.metadata["choices"]
            if choices and parsed not in choices:
                raise ValidationError(
                    f"{self.OPERATION}: option {f.name!r} must be one of {list(choices)}, got {value!r}"
                )
            object.__setattr__(self, f.name, parsed)

    # -- names --------------------------------------------------------------------------------------
    @classmethod
    def iceberg_name(cls, field_name: str) -> str:
        """The Iceberg name of the field ``field_name``."""
        for f in dataclasses.fields(cls):
            if f.name == field_name:
                return str(f.metadata.get("iceberg") or normalize_name(f.name))
        raise KeyError(field_name)

    @classmethod
    def names(cls) -> dict[str, tuple[str, bool]]:
        """Every accepted spelling -> (field name, negated): the Iceberg name, the field name
        and the field name hyphenated (``partial_progress_enabled`` for
        ``partial-progress.enabled``)."""
        out: dict[str, tuple[str, bool]] = {}
        for f in dataclasses.fields(cls):
            iceberg = cls.iceberg_name(f.name)
            out[iceberg] = (f.name, bool(f.metadata.get("negated")))
            out.setdefault(normalize_name(f.name), (f.name, False))
            out.setdefault(iceberg.replace(".", "-"), (f.name, bool(f.metadata.get("negated"))))
        return out

    @classmethod
    def valid_names(cls) -> list[str]:
        """The Iceberg names of the options, sorted."""
        return sorted(cls.iceberg_name(f.name) for f in dataclasses.fields(cls))

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Iceberg name -> what the option is for (CLI help, docs)."""
        return {cls.iceberg_name(f.name): str(f.metadata.get("doc", "")) for f in dataclasses.fields(cls)}

    # -- Iceberg's spelling -----------------------------------------------------------------------
    @classmethod
    def from_iceberg(cls, options: Mapping[str, object] | None) -> Self:
        """The options ``options`` names, by Iceberg name or keyword name; ``None`` values mean
        "not given". An unknown name is a ``ValidationError`` naming the close matches."""
        names = cls.names()
        kwargs: dict[str, Any] = {}
        for raw, value in (options or {}).items():
            key = normalize_name(str(raw))
            found = names.get(key)
            if found is None:
                close = difflib.get_close_matches(key, list(names), n=3, cutoff=0.6)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise ValidationError(
                    f"{cls.OPERATION} has no option {raw!r}; valid options: {', '.join(cls.valid_names())}{hint}"
                )
            name, negated = found
            if name in kwargs:
                raise ValidationError(f"{cls.OPERATION}: option {cls.iceberg_name(name)!r} was given twice")
            if value is None:
                continue
            if negated:
                value = not _bool(str(raw), value)
            kwargs[name] = value
        return cls(**kwargs)

    def to_iceberg(self) -> dict[str, Any]:
        """The options by Iceberg name, as JSON values; options not given (None) are left out."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.metadata.get("negated"):
                value = not value
            elif isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[self.iceberg_name(f.name)] = value
        return out

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults, by field name."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        }

    # -- JSON (plans hold their resolved options) ------------------------------------------------
    def to_json_data(self) -> Any:
        return self.to_iceberg()

    @classmethod
    def from_json_data(cls, data: Any, where: str) -> Self:
        if not isinstance(data, Mapping):
            raise ValidationError(f"{where}: expected an object of options, got {type(data).__name__}")
        return cls.from_iceberg(data)


# -- one dataclass per operation -------------------------------------------------------------------------
_NO_EFFECT = (
    "Iceberg's Spark driver-memory switch; accepted, no effect here: deletes are already work units "
    "spread by the runner"
)


@dataclass(frozen=True, kw_only=True)
class ExpireSnapshotsOptions(MaintenanceOptions):
    """Options of ``expire_snapshots`` (Iceberg's procedure of the same name)."""

    OPERATION: ClassVar[str] = "expire_snapshots"

    older_than: PointInTime | None = field(
        default=None,
        metadata=option(
            "expire snapshots older than this (default: now - history.expire.max-snapshot-age-ms)",
            "timestamp",
        ),
    )
    retain_last: int | None = field(
        default=None,
        metadata=option(
            "ancestors of each branch to keep whatever their age (default history.expire.min-snapshots-to-keep)",
            "int",
        ),
    )
    snapshot_ids: Sequence[int] = field(
        default=(), metadata=option("also expire these snapshots (no ref may point at them)", "int-list")
    )
    clean_expired_metadata: bool = field(
        default=False, metadata=option("remove partition specs and schemas no retained snapshot uses", "bool")
    )
    max_concurrent_deletes: int | None = field(
        default=None, metadata=option("at most this many file deletes at once (default: the runner's)", "int")
    )
    stream_results: bool | None = field(default=None, metadata=option(_NO_EFFECT, "bool"))

    @property
    def older_than_ms(self) -> int | None:
        """``older_than`` as epoch milliseconds (it is parsed to them when the options are made)."""
        return self.older_than if isinstance(self.older_than, int) else None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.retain_last is not None and self.retain_last < 1:
            raise ValidationError(f"expire_snapshots: retain_last must be at least 1, got {self.retain_last}")
        _check_deletes(self.OPERATION, self.max_concurrent_deletes)


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesOptions(MaintenanceOptions):
    """Options of ``remove_orphan_files``. ``delete`` is the negation of Iceberg's ``dry-run``:
    by default nothing is deleted, the orphans are only listed."""

    OPERATION: ClassVar[str] = "remove_orphan_files"

    older_than: PointInTime | None = field(
        default=None,
        metadata=option("only files last modified before this (default: now - 3 days)", "timestamp"),
    )
    location: str | None = field(
        default=None, metadata=option("the directory to list (default: the table location)", "str")
    )
    delete: bool = field(
        default=False,
        metadata=option(
            "record new orphans and delete those recorded orphans.grace ago (Iceberg: dry-run=false)",
            "bool",
            iceberg="dry-run",
            negated=True,
        ),
    )
    max_concurrent_deletes: int | None = field(
        default=None, metadata=option("at most this many file deletes at once (default: the runner's)", "int")
    )
    prefix_mismatch_mode: str = field(
        default="ERROR",
        metadata=option("a path referenced with another scheme/authority: ERROR, IGNORE or DELETE", "str"),
    )
    equal_schemes: Mapping[str, str] | None = field(
        default=None, metadata=option('schemes to treat as equal (default {"s3n,s3a": "s3"})', "str-map")
    )
    equal_authorities: Mapping[str, str] | None = field(
        default=None, metadata=option("authorities to treat as equal", "str-map")
    )
    force: bool = field(default=False, metadata=option("allow an older_than less than a day ago", "bool"))
    stream_results: bool | None = field(default=None, metadata=option(_NO_EFFECT, "bool"))
    prefix_listing: bool | None = field(
        default=None,
        metadata=option(
            "Iceberg's switch to prefix listing; accepted, no effect here: listing always goes through "
            "the FileIO's prefix listing",
            "bool",
        ),
    )

    @property
    def older_than_ms(self) -> int | None:
        """``older_than`` as epoch milliseconds (it is parsed to them when the options are made)."""
        return self.older_than if isinstance(self.older_than, int) else None

    def __post_init__(self) -> None:
        super().__post_init__()
        mode = self.prefix_mismatch_mode.strip().upper()
        if mode not in PREFIX_MISMATCH_MODES:
            raise ValidationError(
                f"remove_orphan_files: prefix_mismatch_mode must be one of {list(PREFIX_MISMATCH_MODES)}, "
                f"got {self.prefix_mismatch_mode!r}"
            )
        object.__setattr__(self, "prefix_mismatch_mode", mode)
        _check_deletes(self.OPERATION, self.max_concurrent_deletes)


@dataclass(frozen=True, kw_only=True)
class FileRewriteOptions(MaintenanceOptions):
    """What every file rewrite takes (Iceberg's ``SizeBasedFileRewritePlanner`` options)."""

    where: str | None = field(
        default=None, metadata=option("only files that may hold rows matching this filter", "str")
    )
    branch: str = field(default=MAIN_BRANCH, metadata=option("the branch to rewrite", "str"))
    target_file_size_bytes: int | None = field(
        default=None,
        metadata=option("output file size (default the table's write target size property)", "int"),
    )
    min_file_size_bytes: int | None = field(
        default=None, metadata=option("smaller files are candidates (default 0.75x target)", "int")
    )
    max_file_size_bytes: int | None = field(
        default=None, metadata=option("larger files are candidates (default 1.8x target)", "int")
    )
    min_input_files: int = field(
        default=DEFAULT_MIN_INPUT_FILES, metadata=option("rewrite a group with this many files", "int")
    )
    rewrite_all: bool = field(
        default=False, metadata=option("rewrite every candidate, ignoring the criteria", "bool")
    )
    partial_progress_enabled: bool = field(
        default=False,
        metadata=option("commit groups in several snapshots", "bool", iceberg="partial-progress.enabled"),
    )
    partial_progress_max_commits: int = field(
        default=DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
        metadata=option("at most this many commits", "int", iceberg="partial-progress.max-commits"),
    )
    max_concurrent_file_group_rewrites: int = field(
        default=DEFAULT_MAX_CONCURRENT_GROUP_REWRITES,
        metadata=option("groups rewritten at once by the local runner", "int"),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("min_input_files", "partial_progress_max_commits", "max_concurrent_file_group_rewrites"):
            value = getattr(self, name)
            if value < 1:
                raise ValidationError(
                    f"{self.OPERATION}: {self.iceberg_name(name)} must be at least 1, got {value}"
                )


@dataclass(frozen=True, kw_only=True)
class RewriteDataFilesOptions(FileRewriteOptions):
    """Options of ``rewrite_data_files`` (compaction; Iceberg's procedure of the same name)."""

    OPERATION: ClassVar[str] = "rewrite_data_files"

    strategy: str | None = field(
        default=None,
        metadata=option(
            "binpack (default) or sort (default when sort_order is given)", "str", choices=("binpack", "sort")
        ),
    )
    sort_order: str | None = field(
        default=None,
        metadata=option("sort strategy order: 'id DESC NULLS LAST,name' (default: the table's)", "str"),
    )
    delete_file_threshold: int = field(
        default=DEFAULT_DELETE_FILE_THRESHOLD,
        metadata=option("a file with this many deletes is a candidate", "int"),
    )
    delete_ratio_threshold: float = field(
        default=DEFAULT_DELETE_RATIO_THRESHOLD,
        metadata=option("a file with this deleted share is a candidate", "float"),
    )
    max_file_group_size_bytes: int = field(
        default=DEFAULT_MAX_FILE_GROUP_SIZE_BYTES, metadata=option("largest group", "int")
    )
    max_files_to_rewrite: int | None = field(
        default=None, metadata=option("rewrite at most this many files", "int")
    )
    partial_progress_max_failed_commits: int | None = field(
        default=None,
        metadata=option(
            "fail when more commits fail (default max-commits)",
            "int",
            iceberg="partial-progress.max-failed-commits",
        ),
    )
    use_starting_sequence_number: bool = field(
        default=True, metadata=option("outputs keep the starting data sequence number", "bool")
    )
    output_spec_id: int | None = field(
        default=None, metadata=option("partition spec of the outputs (default: the current one)", "int")
    )
    remove_dangling_deletes: bool = field(
        default=False, metadata=option("then remove delete files no live data file needs", "bool")
    )
    rewrite_job_order: str = field(default="none", metadata=option("group order", "str", choices=JOB_ORDERS))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_file_group_size_bytes < 1:
            raise ValidationError(f"{self.OPERATION}: max-file-group-size-bytes must be positive")


@dataclass(frozen=True, kw_only=True)
class RewriteDeletionVectorsOptions(FileRewriteOptions):
    """Options of ``rewrite_deletion_vectors`` (v3 and V4 tables)."""

    OPERATION: ClassVar[str] = "rewrite_deletion_vectors"

    delete_ratio_threshold: float = field(
        default=DEFAULT_DELETE_RATIO_THRESHOLD,
        metadata=option("list data files with this deleted share", "float"),
    )


@dataclass(frozen=True, kw_only=True)
class RewritePositionDeleteFilesOptions(RewriteDeletionVectorsOptions):
    """Options of ``rewrite_position_delete_files`` (Iceberg's procedure of the same name)."""

    OPERATION: ClassVar[str] = "rewrite_position_delete_files"

    max_file_group_size_bytes: int = field(
        default=DEFAULT_MAX_FILE_GROUP_SIZE_BYTES, metadata=option("largest group", "int")
    )
    rewrite_job_order: str = field(default="none", metadata=option("group order", "str", choices=JOB_ORDERS))


@dataclass(frozen=True, kw_only=True)
class RewriteManifestsOptions(MaintenanceOptions):
    """Options of ``rewrite_manifests`` (Iceberg's procedure of the same name)."""

    OPERATION: ClassVar[str] = "rewrite_manifests"

    spec_id: int | None = field(
        default=None,
        metadata=option("rewrite the manifests of this partition spec (default: the current one)", "int"),
    )
    sort_by: Sequence[str] = field(
        default=(),
        metadata=option("partition fields to cluster entries by (default: all, in spec order)", "str-list"),
    )
    use_caching: bool = field(
        default=False,
        metadata=option("Spark caching in Iceberg's procedure; accepted, no effect here", "bool"),
    )
    branch: str = field(default=MAIN_BRANCH, metadata=option("the branch to rewrite", "str"))


@dataclass(frozen=True, kw_only=True)
class FlushRootOptions(MaintenanceOptions):
    """Options of ``flush_root`` (V4 tables)."""

    OPERATION: ClassVar[str] = "flush_root"

    force: bool = field(
        default=False, metadata=option("move every root entry, whatever the commit.root.* thresholds", "bool")
    )
    affiliate: bool = field(
        default=True, metadata=option("write delete manifests affiliated with one data manifest", "bool")
    )
    branch: str = field(default=MAIN_BRANCH, metadata=option("the branch whose root to flush", "str"))


def _check_deletes(operation: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValidationError(f"{operation}: max_concurrent_deletes must be at least 1, got {value}")


__all__ = [
    "DEFAULT_DELETE_FILE_THRESHOLD",
    "DEFAULT_DELETE_RATIO_THRESHOLD",
    "DEFAULT_MAX_CONCURRENT_GROUP_REWRITES",
    "DEFAULT_MAX_FILE_GROUP_SIZE_BYTES",
    "DEFAULT_MIN_INPUT_FILES",
    "DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS",
    "JOB_ORDERS",
    "PARSERS",
    "PREFIX_MISMATCH_MODES",
    "ExpireSnapshotsOptions",
    "FileRewriteOptions",
    "FlushRootOptions",
    "MaintenanceOptions",
    "PointInTime",
    "RemoveOrphanFilesOptions",
    "RewriteDataFilesOptions",
    "RewriteDeletionVectorsOptions",
    "RewriteManifestsOptions",
    "RewritePositionDeleteFilesOptions",
    "normalize_name",
    "option",
]
