"""FileIO over ``pyarrow.fs``: local paths and ``file://``, ``s3://``, ``gs://`` and ``hdfs://``.

The filesystem is chosen by the location's scheme and cached per ``(scheme, netloc)`` (S3 and
GCS settings such as the region can differ per bucket). Properties use Iceberg's FileIO
property names (``s3.endpoint``, ``s3.access-key-id``, ``gcs.project-id``, ...); anything not
set falls back to the environment and the SDKs' default credential chains.

Write semantics (the metadata commit protocol depends on them, spec "Metastore Tables"):

* ``write(data, overwrite=False)`` never clobbers. Locally the bytes go to a hidden temp file
  in the target directory which is then hard-linked to the final name: ``link`` fails
  atomically if the name exists, and a reader never sees a half-written file. Object stores
  make an object visible only once it is complete; there the existence check before the PUT
  is not atomic (pyarrow exposes no conditional PUT), which is acceptable because metadata
  file names carry a random UUID and the catalog's compare-and-swap is the real guard.
* HDFS writes go straight to the final name after the existence check; a reader may see a
  partial file while it is being written (it is not referenced until the commit).
"""

from __future__ import annotations

import datetime as _dt
import errno
import functools
import importlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from firn.errors import AlreadyExists, FirnError, InvalidMetadata, NotFound, Unsupported, ValidationError
from firn.io.base import FileInfo
from firn.io.limits import ReadLimit, ReadLimits
from firn.io.local_files import (
    io_error,
    is_not_found,
    list_local,
    make_parent_dirs,
    open_local,
    past_end,
    require_regular,
    write_error,
)
from firn.io.s3 import (  # noqa: F401 - the S3 property names are part of this module's API
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ANONYMOUS,
    S3_CONNECT_TIMEOUT,
    S3_DELETE_BATCH_SIZE,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_PROXY_URI,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_RETRY_MAX_WAIT_MS,
    S3_RETRY_MIN_WAIT_MS,
    S3_RETRY_NUM_RETRIES,
    S3_ROLE_ARN,
    S3_ROLE_SESSION_NAME,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    S3Settings,
    is_transient,
    split_endpoint,
)
from firn.io.s3_delete import S3BatchDeleter
from firn.util.properties import parse_bool

if TYPE_CHECKING:
    from firn.io.base import FileIO

logger = logging.getLogger(__name__)
T = TypeVar("T")

# -- property names (Iceberg FileIO conventions, shared with Java and PyIceberg) ---------------
IO_IMPL = "io-impl"
GCS_PROJECT_ID = "gcs.project-id"
GCS_TOKEN = "gcs.oauth2.token"
GCS_TOKEN_EXPIRES_AT_MS = "gcs.oauth2.token-expires-at"
GCS_SERVICE_HOST = "gcs.service.host"
GCS_DEFAULT_LOCATION = "gcs.default-bucket-location"
GCS_ANONYMOUS = "gcs.anonymous"
HDFS_USER = "hdfs.user"
HDFS_KERBEROS_TICKET = "hdfs.kerberos-ticket"
# Firn-specific knobs.
DELETE_THREADS = "io.delete-threads"
DEFAULT_DELETE_THREADS = 16
LOCAL_FSYNC = "io.local.fsync"

LOCAL_SCHEMES = frozenset({"", "file"})
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
GCS_SCHEMES = frozenset({"gs", "gcs"})
HDFS_SCHEMES = frozenset({"hdfs", "viewfs"})
SUPPORTED_SCHEMES = LOCAL_SCHEMES | S3_SCHEMES | GCS_SCHEMES | HDFS_SCHEMES

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParsedLocation:
    """A location split into the filesystem that serves it and the path inside it."""

    scheme: str  # "" for a plain local path
    netloc: str  # bucket or namenode; "" for local files
    path: str  # the path pyarrow's filesystem expects

    @property
    def is_local(self) -> bool:
        return self.scheme in LOCAL_SCHEMES


def parse_location(location: str) -> ParsedLocation:
    """Split ``location`` by scheme. Plain paths are made absolute (pyarrow needs that).

    Parsing is by hand rather than with ``urllib`` because object keys may legally contain
    ``?`` and ``#``, which a URL parser would cut off as query and fragment.
    """
    if not location:
        raise ValidationError("empty file location")
    if "\x00" in location:  # no filesystem or object store accepts one; damaged metadata does
        raise ValidationError(f"invalid file location {location!r}: it contains a NUL character")
    m = _URI.match(location)
    if m is None:
        if location.startswith("file:"):  # Hadoop's single-slash form, file:/tmp/x
            return ParsedLocation("file", "", os.path.abspath(location[len("file:") :]))
        return ParsedLocation("", "", os.path.abspath(location))
    scheme, rest = m.group(1).lower(), m.group(2)
    if scheme not in SUPPORTED_SCHEMES:
        raise Unsupported(
            f"{location}: no FileIO for scheme {scheme!r}; supported: "
            f"{', '.join(sorted(s for s in SUPPORTED_SCHEMES if s))}"
        )
    netloc, slash, key = rest.partition("/")
    if scheme == "file":
        if netloc not in ("", "localhost"):
            raise Unsupported(f"{location}: file URIs with a remote host are not supported")
        return ParsedLocation("file", "", os.path.abspath("/" + key))
    if scheme in HDFS_SCHEMES:
        return ParsedLocation(scheme, netloc, "/" + key if slash else "/")
    if not netloc:
        raise ValidationError(f"{location}: missing bucket name")
    return ParsedLocation(scheme, netloc, f"{netloc}/{key}".rstrip("/") if key else netloc)


def _taken(fs: pafs.FileSystem, parsed: ParsedLocation) -> bool:
    """Whether a remote name is taken (a file or a directory there). On S3 opening the object
    is one ``HEAD``, where ``get_file_info`` adds a listing to tell a missing key from a
    "directory": a small write is then ``HEAD`` + ``PUT``."""
    if parsed.scheme in S3_SCHEMES:
        try:
            fs.open_input_file(parsed.path).close()
            return True
        except FileNotFoundError:
            return False
    return bool(fs.get_file_info(parsed.path).type != pafs.FileType.NotFound)


class PyArrowInputFile:
    """A readable file; local files are read with plain ``os`` calls (cheaper than pyarrow)."""

    __slots__ = ("_io", "_length", "_location", "_parsed")

    def __init__(self, io: PyArrowFileIO, location: str) -> None:
        self._io = io
        self._location = location
        self._parsed = parse_location(location)
        self._length: int | None = None

    @property
    def location(self) -> str:
        return self._location

    @property
    def read_limits(self) -> ReadLimits:
        return self._io.read_limits

    def read(self, limit: ReadLimit | None = None) -> bytes:
        p = self._parsed
        try:
            if p.is_local:
                with open(open_local(self._location, p.path), "rb") as f:
                    if limit is None:
                        return f.read()
                    limit.check(self._location, os.fstat(f.fileno()).st_size)
                    data = f.read(limit.max_bytes + 1)  # the file may grow after the check
            else:
                data = self._io.retrying(f"read {self._location}", lambda: self._read_remote(limit))
                if limit is None:
                    return data
        except (OSError, pa.ArrowException) as e:
            raise io_error(self._location, "read", e) from e
        limit.check(self._location, len(data))
        return data

    def _read_remote(self, limit: ReadLimit | None) -> bytes:
        with self._io.filesystem_for(self._parsed).open_input_file(self._parsed.path) as af:
            if limit is None:
                return bytes(af.readall())
            limit.check(self._location, af.size())
            return bytes(af.read(limit.max_bytes + 1))

    def read_range(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValidationError(f"{self._location}: invalid range offset={offset} length={length}")
        p = self._parsed
        try:
            if p.is_local:
                with open(open_local(self._location, p.path), "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    # A damaged length must not become a huge allocation: check it first.
                    if offset + length > size:
                        raise past_end(self._location, offset, length, size)
                    f.seek(offset)
                    data = f.read(length)
            else:
                data = self._io.retrying(
                    f"read {self._location}", lambda: self._read_range_remote(offset, length)
                )
        except (OSError, pa.ArrowException) as e:
            raise io_error(self._location, "read", e) from e
        if len(data) < length:
            raise InvalidMetadata(
                f"file is truncated: wanted {length} bytes at offset {offset}, got {len(data)}",
                location=self._location,
            )
        return data

    def _read_range_remote(self, offset: int, length: int) -> bytes:
        with self._io.filesystem_for(self._parsed).open_input_file(self._parsed.path) as af:
            size = af.size()
            if offset + length > size:
                raise past_end(self._location, offset, length, size)
            return bytes(af.read_at(length, offset))

    def length(self) -> int:
        if self._length is None:
            p = self._parsed
            try:
                if p.is_local:
                    st = os.stat(p.path)
                    require_regular(self._location, st.st_mode)
                    self._length = st.st_size
                else:
                    info = self._io.filesystem_for(p).get_file_info(p.path)
                    if info.type != pafs.FileType.File:
                        raise NotFound(f"file not found: {self._location}")
                    self._length = int(info.size)
            except (OSError, pa.ArrowException) as e:
                raise io_error(self._location, "stat", e) from e
        return self._length

    def exists(self) -> bool:
        p = self._parsed
        if p.is_local:
            return os.path.isfile(p.path)
        try:
            return bool(self._io.filesystem_for(p).get_file_info(p.path).type == pafs.FileType.File)
        except (OSError, pa.ArrowException) as e:
            raise io_error(self._location, "stat", e) from e

    def open_arrow(self) -> pa.NativeFile:
        p = self._parsed
        try:
            if p.is_local:  # pyarrow would block on a FIFO and read a device as empty
                require_regular(self._location, os.stat(p.path).st_mode)
            return self._io.filesystem_for(p).open_input_file(p.path)
        except (OSError, pa.ArrowException) as e:
            raise io_error(self._location, "open", e) from e

    def __repr__(self) -> str:
        return f"PyArrowInputFile({self._location!r})"


class PyArrowOutputFile:
    """A file to be written once (Iceberg files are immutable after they are written)."""

    __slots__ = ("_io", "_location", "_parsed")

    def __init__(self, io: PyArrowFileIO, location: str) -> None:
        self._io = io
        self._location = location
        self._parsed = parse_location(location)

    @property
    def location(self) -> str:
        return self._location

    def write(self, data: bytes, *, overwrite: bool = False) -> int:
        """Write ``data``; ``AlreadyExists`` only if the file exists and ``overwrite`` is
        False; any other failure is a ``FirnError`` saying the write failed and why."""
        if self._parsed.is_local:
            return self._write_local(data, overwrite)
        p = self._parsed
        fs = self._io.filesystem_for(p)
        try:
            if not overwrite and _taken(fs, p):
                raise AlreadyExists(f"file already exists: {self._location}")
            with fs.open_output_stream(p.path) as out:
                out.write(data)
        except (OSError, pa.ArrowException) as e:
            raise write_error(self._location, e) from e
        return len(data)

    def _write_local(self, data: bytes, overwrite: bool) -> int:
        path = self._parsed.path
        directory, base = os.path.split(path)
        make_parent_dirs(self._location, directory)
        # Hidden temp name in the same directory, so link/replace stay on one filesystem.
        tmp = os.path.join(directory, f".{base}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "xb") as f:
                f.write(data)
                if self._io.fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as e:
            self._remove_quietly(tmp)
            raise write_error(self._location, e, f"cannot write a file in {directory}") from e
        try:
            if overwrite:
                os.replace(tmp, path)
            else:
                self._publish_no_replace(tmp, path, data)
        except FirnError:
            raise
        except OSError as e:
            raise write_error(self._location, e) from e
        finally:
            self._remove_quietly(tmp)
        return len(data)

    @staticmethod
    def _remove_quietly(tmp: str) -> None:
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        except OSError:  # the write's own error matters more; orphan-file removal finds it
            logger.warning("could not remove the temporary file %s", tmp)

    def _publish_no_replace(self, tmp: str, path: str, data: bytes) -> None:
        """Make ``tmp`` visible as ``path`` unless ``path`` exists, atomically where possible."""
        try:
            os.link(tmp, path)  # fails with EEXIST if the name is taken: an atomic no-replace rename
            return
        except FileExistsError:
            raise AlreadyExists(f"file already exists: {self._location}") from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
        # Filesystems without hard links: exclusive create still never clobbers, though a
        # concurrent reader could observe the file before it is complete.
        try:
            with open(path, "xb") as f:
                f.write(data)
        except FileExistsError:
            raise AlreadyExists(f"file already exists: {self._location}") from None

    def open_arrow(self) -> pa.NativeFile:
        """A writable stream; fails with ``AlreadyExists`` if the file exists (never clobbers)."""
        p = self._parsed
        try:
            if p.is_local:
                make_parent_dirs(self._location, os.path.dirname(p.path))
                # Reserve the name atomically, then let pyarrow (re)open it for streaming.
                try:
                    os.close(os.open(p.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                except FileExistsError:  # O_EXCL: the name itself is taken
                    raise AlreadyExists(f"file already exists: {self._location}") from None
                return self._io.filesystem_for(p).open_output_stream(p.path)
            fs = self._io.filesystem_for(p)
            if _taken(fs, p):
                raise AlreadyExists(f"file already exists: {self._location}")
            return fs.open_output_stream(p.path)
        except (OSError, pa.ArrowException) as e:
            raise write_error(self._location, e, "cannot open it for writing") from e

    def __repr__(self) -> str:
        return f"PyArrowOutputFile({self._location!r})"


def _delete_batch(
    deleter: S3BatchDeleter, locations: list[str], keys: list[str]
) -> tuple[int, dict[str, str]]:
    errors = deleter.delete(keys)
    failed = {loc: errors[key] for loc, key in zip(locations, keys) if key in errors}
    return len(keys) - len(failed), failed


class PyArrowFileIO:
    """:class:`~firn.io.base.FileIO` over ``pyarrow.fs``, chosen by the location's scheme."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self._properties: dict[str, str] = {str(k): str(v) for k, v in (properties or {}).items()}
        self._filesystems: dict[tuple[str, str], pafs.FileSystem] = {}
        self._lock = threading.RLock()  # filesystem_for holds it while a filesystem asks _region
        self.fsync = parse_bool(self._properties.get(LOCAL_FSYNC))
        threads = self._properties.get(DELETE_THREADS)
        self._delete_threads = int(threads) if threads else DEFAULT_DELETE_THREADS
        if self._delete_threads < 1:
            raise ValidationError(f"{DELETE_THREADS} must be >= 1, got {threads}")
        self.read_limits = ReadLimits.from_properties(self._properties)
        # Parsed once, so a bad value fails here, naming the property (firn.io.s3).
        self.s3 = S3Settings.from_properties(self._properties)
        self._regions: dict[str, str | None] = {}
        self._deleters: dict[str, S3BatchDeleter | None] = {}

    @property
    def properties(self) -> Mapping[str, str]:
        return dict(self._properties)

    # -- FileIO --------------------------------------------------------------------------------
    def new_input(self, location: str) -> PyArrowInputFile:
        return PyArrowInputFile(self, location)

    def new_output(self, location: str) -> PyArrowOutputFile:
        return PyArrowOutputFile(self, location)

    def delete(self, location: str) -> None:
        _, failed = self._delete_all([location])
        if failed:
            raise FirnError(f"{location}: delete failed: {failed[location]}")

    def delete_many(self, locations: Iterable[str]) -> int:
        """Delete in parallel (``io.delete-threads``, default 16); missing files are skipped.
        On S3, keys go in ``DeleteObjects`` batches (:mod:`firn.io.s3_delete`).

        Every deletion is attempted; if some fail, one error reports how many and which.
        Returns how many files were deleted (on S3 in batches: deleted or already gone,
        which S3 does not tell apart)."""
        todo = list(dict.fromkeys(locations))
        deleted, failed = self._delete_all(todo)
        if failed:
            sample = ", ".join(list(failed)[:5])
            first = next(iter(failed.values()))
            raise FirnError(f"failed to delete {len(failed)} of {len(todo)} files (e.g. {sample}): {first}")
        return deleted

    def try_delete_many(self, locations: Iterable[str]) -> dict[str, str]:
        """Delete every location that exists; returns the ones that could not be deleted,
        with why, and never raises for a single file (:class:`firn.io.base.ReportsDeleteFailures`)."""
        return self._delete_all(locations)[1]

    def _delete_all(self, locations: Iterable[str]) -> tuple[int, dict[str, str]]:
        """(files deleted, failures by location). S3 keys of a bucket Firn can sign requests
        for go in ``DeleteObjects`` batches of ``s3.delete.batch-size`` (retried per
        ``s3.retry.*``); everything else file by file. Either way ``io.delete-threads``
        requests run at once."""
        jobs: list[Callable[[], tuple[int, dict[str, str]]]] = []
        groups: dict[S3BatchDeleter, tuple[list[str], list[str]]] = {}
        for loc in dict.fromkeys(locations):
            deleter, key = self._batch_target(loc)
            if deleter is None or key is None:
                jobs.append(functools.partial(self._delete_single, loc))
            else:
                locs, keys = groups.setdefault(deleter, ([], []))
                locs.append(loc)
                keys.append(key)
        for deleter, (locs, keys) in groups.items():
            size = deleter.settings.delete_batch_size
            for i in range(0, len(keys), size):
                jobs.append(functools.partial(_delete_batch, deleter, locs[i : i + size], keys[i : i + size]))
        if len(jobs) <= 1 or self._delete_threads == 1:
            outcomes = [job() for job in jobs]
        else:
            with ThreadPoolExecutor(max_workers=min(self._delete_threads, len(jobs))) as pool:
                outcomes = list(pool.map(lambda job: job(), jobs))
        failed: dict[str, str] = {}
        for _, f in outcomes:
            failed.update(f)
        return sum(n for n, _ in outcomes), failed

    def _delete_single(self, location: str) -> tuple[int, dict[str, str]]:
        try:
            return (1 if self._delete_one(location) else 0), {}
        except FirnError as e:
            return 0, {location: str(e)}

    def _batch_target(self, location: str) -> tuple[S3BatchDeleter, str] | tuple[None, None]:
        """The batch deleter and key for an S3 location, when batch deletes are possible."""
        try:
            p = parse_location(location)
        except FirnError:
            return None, None
        if p.scheme not in S3_SCHEMES:
            return None, None
        key = p.path[len(p.netloc) + 1 :]
        if not key:
            return None, None  # a bucket, not a file: the single delete reports it
        deleter = self._deleter(p.netloc)
        return (deleter, key) if deleter is not None else (None, None)

    def _deleter(self, bucket: str) -> S3BatchDeleter | None:
        with self._lock:
            if bucket in self._deleters:
                return self._deleters[bucket]
        deleter = S3BatchDeleter.for_bucket(self.s3, bucket, self._region(bucket))
        with self._lock:
            return self._deleters.setdefault(bucket, deleter)

    def _region(self, bucket: str) -> str | None:
        with self._lock:
            if bucket in self._regions:
                return self._regions[bucket]
        region = self.s3.region_for(bucket)  # may ask S3: outside the lock
        with self._lock:
            return self._regions.setdefault(bucket, region)

    def retrying(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` (a remote read or listing), retried on transient errors per ``s3.retry.*``."""
        return self.s3.retry.call(what, fn, is_transient)

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        """Every file under ``prefix`` (a directory-like prefix), recursively.

        Locations are returned in the same form as ``prefix`` (``file://`` stays ``file://``,
        a relative path stays relative), so callers can compare them with what they wrote.
        Local symlinks below ``prefix`` are neither followed nor listed (pyarrow's
        ``FileSelector`` follows them: orphan removal once deleted a symlinked directory's
        target this way, issue 18 finding 3).
        """
        p = parse_location(prefix)
        if p.is_local:
            yield from list_local(p.path.rstrip("/") or "/", prefix.rstrip("/"))
            return
        fs = self.filesystem_for(p)
        base = p.path.rstrip("/")
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        try:
            # One request per 1,000 keys on S3; a listing that fails part-way starts over.
            infos = self.retrying(f"list {prefix}", lambda: fs.get_file_info(selector))
        except (OSError, pa.ArrowException) as e:
            if is_not_found(e):  # e.g. the prefix is a file, not a directory
                return
            raise io_error(prefix, "list", e) from e
        out_prefix = prefix.rstrip("/")
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(base) :].lstrip("/")
            mtime = info.mtime_ns
            yield FileInfo(
                location=f"{out_prefix}/{rel}",
                size=int(info.size) if info.size is not None else 0,
                modified_ms=mtime // 1_000_000 if mtime is not None else None,
            )

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The cached pyarrow filesystem and in-filesystem path for ``location``.

        This is pyarrow's own filesystem, with pyarrow's semantics: writing through it locally
        needs the parent directory to exist (``fs.create_dir(parent, recursive=True)``) and
        overwrites. Prefer :meth:`new_output` for files that must not be clobbered.
        """
        p = parse_location(location)
        return self.filesystem_for(p), p.path

    # -- internals -----------------------------------------------------------------------------
    def _delete_one(self, location: str) -> bool:
        """Delete one file; returns False if it did not exist."""
        p = parse_location(location)
        try:
            if p.is_local:
                os.remove(p.path)
            else:
                self.filesystem_for(p).delete_file(p.path)
        except (OSError, pa.ArrowException) as e:
            if is_not_found(e):
                return False
            raise io_error(location, "delete", e) from e
        return True

    def filesystem_for(self, parsed: ParsedLocation) -> pafs.FileSystem:
        """The cached pyarrow filesystem for a parsed location (one per scheme and bucket)."""
        key = ("file", "") if parsed.is_local else (parsed.scheme, parsed.netloc)
        fs = self._filesystems.get(key)
        if fs is not None:
            return fs
        with self._lock:
            fs = self._filesystems.get(key)
            if fs is None:
                fs = self._create_filesystem(parsed)
                self._filesystems[key] = fs
            return fs

    def _create_filesystem(self, parsed: ParsedLocation) -> pafs.FileSystem:
        if parsed.is_local:
            return pafs.LocalFileSystem()
        if parsed.scheme in S3_SCHEMES:
            return pafs.S3FileSystem(**self.s3_options(parsed.netloc))
        if parsed.scheme in GCS_SCHEMES:
            return pafs.GcsFileSystem(**self.gcs_options())
        if parsed.scheme in HDFS_SCHEMES:
            host, _, port = parsed.netloc.partition(":")
            # Port 0 lets libhdfs use the configured default (needed for HA nameservices).
            return pafs.HadoopFileSystem(
                host or "default",
                int(port) if port else 0,
                user=self._properties.get(HDFS_USER),
                kerb_ticket=self._properties.get(HDFS_KERBEROS_TICKET)
                or self._properties.get("hdfs.kerberos_ticket"),
            )
        raise Unsupported(f"no FileIO for scheme {parsed.scheme!r}")  # pragma: no cover - parse rejects

    def s3_options(self, bucket: str | None = None) -> dict[str, object]:
        """``S3FileSystem`` keyword arguments from properties, falling back to the environment
        (:class:`firn.io.s3.S3Settings`).

        Credentials not given here come from the AWS default chain (environment variables,
        ``~/.aws``, instance metadata). With neither a region nor an endpoint, the bucket's
        region is looked up once (it is cached with the filesystem).
        """
        return self.s3.pyarrow_options(self._region(bucket) if bucket else self.s3.region)

    def gcs_options(self) -> dict[str, object]:
        """``GcsFileSystem`` keyword arguments (default credentials per Google's auth rules)."""
        props = self._properties
        opts: dict[str, object] = {}
        if props.get(GCS_PROJECT_ID):
            opts["project_id"] = props[GCS_PROJECT_ID]
        if props.get(GCS_TOKEN):
            opts["access_token"] = props[GCS_TOKEN]
            expires = props.get(GCS_TOKEN_EXPIRES_AT_MS)
            # pyarrow requires an expiry with a token; without one assume an hour (tokens' usual life).
            opts["credential_token_expiration"] = (
                _dt.datetime.fromtimestamp(int(expires) / 1000, tz=_dt.UTC)
                if expires
                else _dt.datetime.now(tz=_dt.UTC) + _dt.timedelta(hours=1)
            )
        endpoint = props.get(GCS_SERVICE_HOST) or os.environ.get("STORAGE_EMULATOR_HOST")
        if endpoint:
            scheme, host = split_endpoint(endpoint)
            opts["endpoint_override"] = host
            if scheme:
                opts["scheme"] = scheme
        if props.get(GCS_DEFAULT_LOCATION):
            opts["default_bucket_location"] = props[GCS_DEFAULT_LOCATION]
        if parse_bool(props.get(GCS_ANONYMOUS)):
            opts["anonymous"] = True
        return opts

    def __repr__(self) -> str:
        return f"PyArrowFileIO(schemes={sorted({k[0] for k in self._filesystems})})"


def load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> FileIO:
    """The FileIO for ``properties`` (and optionally the location it will serve).

    ``io-impl`` names a class (``"package.module.Class"``) constructed with the properties; a
    ``memory://`` location gets a fresh :class:`~firn.io.memory.InMemoryFileIO`; everything
    else gets :class:`PyArrowFileIO`. An unsupported location scheme fails here, early.
    """
    props = dict(properties or {})
    impl = props.get(IO_IMPL)
    if impl:
        module_name, _, class_name = impl.rpartition(".")
        if not module_name:
            raise ValidationError(f"{IO_IMPL} must be a dotted class path, got {impl!r}")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as e:
            raise ValidationError(f"cannot load {IO_IMPL}={impl!r}: {e}") from e
        io: FileIO = cls(props)
        return io
    if location is not None and location.startswith("memory:"):
        from firn.io.memory import InMemoryFileIO

        return InMemoryFileIO(props)
    if location is not None:
        parse_location(location)
    return PyArrowFileIO(props)


__all__ = [
    "PyArrowFileIO",
    "PyArrowInputFile",
    "PyArrowOutputFile",
    "ParsedLocation",
    "load_file_io",
    "parse_bool",
    "parse_location",
]
