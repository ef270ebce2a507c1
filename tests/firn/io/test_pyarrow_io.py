"""PyArrowFileIO specifics: location parsing, local atomic writes, cloud options, load_file_io."""

from __future__ import annotations

import errno
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from firn.errors import AlreadyExists, FirnError, NotFound, Unsupported, ValidationError
from firn.io.memory import InMemoryFileIO
from firn.io.parquet import write_parquet_file
from firn.io.pyarrow_io import PyArrowFileIO, load_file_io, parse_bool, parse_location
from firn.spec.properties import TableProperties
from firn.spec.schema import Schema
from firn.spec.types import LONG, NestedField


@pytest.mark.parametrize(
    ("location", "scheme", "netloc", "path"),
    [
        ("/tmp/wh/t", "", "", "/tmp/wh/t"),
        ("file:///tmp/wh/t", "file", "", "/tmp/wh/t"),
        ("file:/tmp/wh/t", "file", "", "/tmp/wh/t"),
        ("file://localhost/tmp/x", "file", "", "/tmp/x"),
        ("s3://bucket/a/b.json", "s3", "bucket", "bucket/a/b.json"),
        ("s3a://bucket/k?x#y", "s3a", "bucket", "bucket/k?x#y"),  # keys may contain ? and #
        ("s3://bucket", "s3", "bucket", "bucket"),
        ("gs://bkt/p/q", "gs", "bkt", "bkt/p/q"),
        ("hdfs://nn:8020/warehouse/t", "hdfs", "nn:8020", "/warehouse/t"),
        ("HDFS://nn/x", "hdfs", "nn", "/x"),
    ],
)
def test_parse_location(location: str, scheme: str, netloc: str, path: str) -> None:
    parsed = parse_location(location)
    assert (parsed.scheme, parsed.netloc, parsed.path) == (scheme, netloc, path)


def test_parse_location_relative_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_location("wh/t").path == str(tmp_path / "wh" / "t")
    with pytest.raises(Unsupported, match="ftp"):
        parse_location("ftp://host/x")
    with pytest.raises(ValidationError, match="bucket"):
        parse_location("s3:///key")
    with pytest.raises(ValidationError):
        parse_location("")
    with pytest.raises(Unsupported, match="remote host"):
        parse_location("file://otherhost/x")
    # A damaged manifest list can hold one; open() would raise a bare ValueError.
    with pytest.raises(ValidationError, match="NUL"):
        parse_location("/wh/t/metadata/m\x000.avro")


def test_local_write_leaves_no_temp_files(tmp_path: Path) -> None:
    io = PyArrowFileIO()
    for i in range(5):
        io.new_output(str(tmp_path / "m" / f"{i}.json")).write(b"{}")
    with pytest.raises(AlreadyExists):
        io.new_output(str(tmp_path / "m" / "0.json")).write(b"{}")
    assert sorted(os.listdir(tmp_path / "m")) == [f"{i}.json" for i in range(5)]


def test_concurrent_writers_exactly_one_wins(tmp_path: Path) -> None:
    io = PyArrowFileIO()
    location = str(tmp_path / "race" / "00001.metadata.json")
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        barrier.wait()
        try:
            io.new_output(location).write(f"writer-{i}".encode() * 1000)
            outcomes[i] = "won"
        except AlreadyExists:
            outcomes[i] = "lost"

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, o in outcomes.items() if o == "won"]
    assert len(winners) == 1 and len(outcomes) == 8
    assert io.new_input(location).read() == f"writer-{winners[0]}".encode() * 1000


def test_no_hard_links_falls_back_to_exclusive_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_link)
    io = PyArrowFileIO()
    location = str(tmp_path / "f.json")
    io.new_output(location).write(b"one")
    with pytest.raises(AlreadyExists):
        io.new_output(location).write(b"two")
    assert io.new_input(location).read() == b"one"
    assert os.listdir(tmp_path) == ["f.json"]


def test_fsync_property(tmp_path: Path) -> None:
    io = PyArrowFileIO({"io.local.fsync": "true"})
    assert io.fsync
    io.new_output(str(tmp_path / "x")).write(b"durable")
    assert io.new_input(str(tmp_path / "x")).read() == b"durable"


def test_os_errors_are_wrapped_with_the_location(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_bytes(b"x")
    with pytest.raises(FirnError, match="plain-file/child") as info:
        PyArrowFileIO().new_output(str(tmp_path / "plain-file" / "child")).write(b"x")
    assert isinstance(info.value.__cause__, OSError)


# -- write failures are write failures: never NotFound, never AlreadyExists ------------------
def _write_both_ways(location: str) -> list[FirnError]:
    """The error of ``write`` and of ``open_arrow`` (each on its own name)."""
    io = PyArrowFileIO()
    errors: list[FirnError] = []
    for attempt in (
        lambda: io.new_output(location).write(b"x"),
        lambda: io.new_output(location + ".2").open_arrow(),
    ):
        with pytest.raises(FirnError) as info:
            attempt()
        errors.append(info.value)
    return errors


def _assert_write_failure(error: FirnError, location: str, why: str) -> None:
    assert type(error) is FirnError, f"{type(error).__name__}: {error}"  # not NotFound / AlreadyExists
    assert str(error).startswith(f"{location}"), error
    assert ": write failed: " in str(error) and why in str(error), error


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_a_directory_that_cannot_be_created_is_a_write_failure_not_not_found() -> None:
    location = "/proc/firn-no-such-dir/sub/00001-x.metadata.json"
    for error in _write_both_ways(location):
        _assert_write_failure(error, location, "cannot create directory /proc/firn-no-such-dir/sub: ")
        assert "No such file or directory" in str(error)
    # A directory that exists but takes no files: the file cannot be created.
    location = "file:///proc/self/00001-x.metadata.json"
    write, arrow = _write_both_ways(location)
    _assert_write_failure(write, location, "cannot write a file in /proc/self: ")
    _assert_write_failure(arrow, location, "cannot open it for writing: ")


def test_a_path_through_a_regular_file_is_a_write_failure_not_already_exists(tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"data")
    location = str(tmp_path / "plain" / "m.json")
    for error in _write_both_ways(location):
        _assert_write_failure(error, location, f"{tmp_path / 'plain'} exists and is not a directory")
    location = str(tmp_path / "plain" / "deeper" / "m.json")
    for error in _write_both_ways(location):
        _assert_write_failure(error, location, f"cannot create directory {tmp_path / 'plain' / 'deeper'}: ")
        assert "Not a directory" in str(error)
    assert sorted(os.listdir(tmp_path)) == ["plain"] and (tmp_path / "plain").read_bytes() == b"data"


def test_only_a_taken_name_is_already_exists_and_only_a_missing_file_read_is_not_found(
    tmp_path: Path,
) -> None:
    io = PyArrowFileIO()
    target = str(tmp_path / "d" / "m.json")
    io.new_output(target).write(b"first")
    with pytest.raises(AlreadyExists, match="file already exists"):
        io.new_output(target).write(b"second")
    with pytest.raises(AlreadyExists, match="file already exists"):
        io.new_output(target).open_arrow()
    with pytest.raises(NotFound, match="file not found"):
        io.new_input(str(tmp_path / "d" / "missing.json")).read()
    assert io.new_input(target).read() == b"first"


class _NoSuchBucket(BaseHTTPRequestHandler):
    """An S3 endpoint on which the bucket does not exist: every request gets S3's 404."""

    BODY = (
        b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code>'
        b"<Message>The specified bucket does not exist</Message><BucketName>gone</BucketName></Error>"
    )

    def _reply(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # pyarrow's PUT bodies
            while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)) > 0:
                self.rfile.read(size + 2)
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers (checksums)
        elif int(self.headers.get("Content-Length") or 0):
            self.rfile.read(int(self.headers["Content-Length"]))
        body = b"" if self.command == "HEAD" else self.BODY
        self.send_response(404)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _reply

    def log_message(self, *args: object) -> None:
        pass


def test_s3_write_to_a_missing_bucket_is_a_write_failure_and_a_read_not_found() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoSuchBucket)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        io = PyArrowFileIO(
            {
                "s3.endpoint": f"http://127.0.0.1:{server.server_port}",
                "s3.region": "us-east-1",
                "s3.access-key-id": "key",
                "s3.secret-access-key": "secret",
            }
        )
        with pytest.raises(FirnError) as info:
            io.new_output("s3://gone/wh/m.json").write(b"x")
        _assert_write_failure(info.value, "s3://gone/wh/m.json", "NO_SUCH_BUCKET")
        # A streamed write (Parquet) learns of the missing bucket when the stream closes: S3
        # files open lazily (one PUT for a small file), and the writer's error names the file.
        schema = Schema(NestedField(1, "id", LONG, required=False))
        with pytest.raises(FirnError) as info:
            write_parquet_file(
                io,
                "s3://gone/wh/m2.parquet",
                pa.table({"id": pa.array([1], pa.int64())}),
                schema,
                TableProperties.parse({}),
            )
        _assert_write_failure(info.value, "s3://gone/wh/m2.parquet", "NO_SUCH_BUCKET")
        with pytest.raises(NotFound, match=r"file not found: s3://gone/wh/m\.json"):
            io.new_input("s3://gone/wh/m.json").read()
    finally:
        server.shutdown()
        server.server_close()


def test_delete_many_reports_failures(tmp_path: Path) -> None:
    io = PyArrowFileIO({"io.delete-threads": "4"})
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "child").write_bytes(b"x")
    (tmp_path / "ok").write_bytes(b"x")
    # Deleting a non-empty directory as a file fails; the other deletion still happens.
    with pytest.raises(FirnError, match="failed to delete 1 of 2"):
        io.delete_many([str(tmp_path / "dir"), str(tmp_path / "ok")])
    assert not (tmp_path / "ok").exists()


def test_s3_options_from_properties() -> None:
    io = PyArrowFileIO(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key-id": "AK",
            "s3.secret-access-key": "SK",
            "s3.session-token": "TOK",
            "s3.region": "eu-west-1",
            "s3.path-style-access": "true",
            "s3.connect-timeout": "2.5",
            "s3.retry.num-retries": "2",
        }
    )
    opts = io.s3_options("bucket")
    retry = opts.pop("retry_strategy")
    assert isinstance(retry, pafs.AwsStandardS3RetryStrategy) and retry.max_attempts == 3
    assert opts == {
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
        "access_key": "AK",
        "secret_key": "SK",
        "session_token": "TOK",
        "region": "eu-west-1",
        "force_virtual_addressing": False,
        "connect_timeout": 2.5,
        "request_timeout": 3.0,  # the documented default
        "allow_delayed_open": True,  # a small file is one PUT
    }


def test_s3_options_fall_back_to_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://minio.local:9000/")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    opts = PyArrowFileIO().s3_options("bucket")
    retry = opts.pop("retry_strategy")
    assert isinstance(retry, pafs.AwsStandardS3RetryStrategy) and retry.max_attempts == 6  # 5 retries
    assert opts == {
        "endpoint_override": "minio.local:9000",
        "scheme": "https",
        "region": "us-west-2",
        "connect_timeout": 1.0,
        "request_timeout": 3.0,
        "allow_delayed_open": True,
    }


def test_filesystems_are_cached_per_bucket() -> None:
    io = PyArrowFileIO({"s3.endpoint": "http://127.0.0.1:1", "s3.region": "us-east-1"})
    fs_a, path_a = io.arrow_filesystem("s3://a/x/y.parquet")
    fs_a2, _ = io.arrow_filesystem("s3a://a/z")  # another scheme is another cache key
    fs_a3, _ = io.arrow_filesystem("s3://a/other")
    fs_b, _ = io.arrow_filesystem("s3://b/x")
    assert isinstance(fs_a, pafs.S3FileSystem)
    assert path_a == "a/x/y.parquet"
    assert fs_a is fs_a3 and fs_a is not fs_b and fs_a is not fs_a2
    assert fs_a.region == "us-east-1"
    local_1, _ = io.arrow_filesystem("/tmp/x")
    local_2, _ = io.arrow_filesystem("file:///tmp/y")
    assert local_1 is local_2 and isinstance(local_1, pafs.LocalFileSystem)


def test_gcs_options_from_properties() -> None:
    io = PyArrowFileIO(
        {
            "gcs.project-id": "proj",
            "gcs.oauth2.token": "tok",
            "gcs.oauth2.token-expires-at": "1700000000000",
            "gcs.service.host": "http://127.0.0.1:4443",
        }
    )
    opts = io.gcs_options()
    assert opts["project_id"] == "proj" and opts["access_token"] == "tok"
    assert opts["endpoint_override"] == "127.0.0.1:4443" and opts["scheme"] == "http"
    assert int(opts["credential_token_expiration"].timestamp()) == 1_700_000_000  # type: ignore[attr-defined]


def test_load_file_io() -> None:
    assert isinstance(load_file_io({}), PyArrowFileIO)
    assert isinstance(load_file_io({}, "s3://bucket/wh"), PyArrowFileIO)
    assert isinstance(load_file_io({}, "memory://wh"), InMemoryFileIO)
    custom = load_file_io({"io-impl": "firn.io.memory.InMemoryFileIO", "k": "v"}, "/tmp/x")
    assert isinstance(custom, InMemoryFileIO) and custom.properties["k"] == "v"
    with pytest.raises(ValidationError, match="io-impl"):
        load_file_io({"io-impl": "firn.io.nope.Missing"})
    with pytest.raises(Unsupported):
        load_file_io({}, "ftp://x/y")


def test_parse_bool() -> None:
    assert parse_bool("TRUE") and not parse_bool("false") and parse_bool(None, default=True)
    with pytest.raises(ValidationError):
        parse_bool("maybe")
