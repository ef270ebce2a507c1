"""``firn serve``: the real command in a subprocess, used by Firn's client, then stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from click.testing import CliRunner

import firn
from firn.cli import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], token: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"firn serve exited with {process.returncode}: {process.stderr.read()!r}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"{url}/v1/config", headers={"Authorization": f"Bearer {token}"}).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("firn serve did not start within 60 s")


def test_firn_serve(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "firn.cli",
        "serve",
        "--catalog",
        f"sqlite:///{tmp_path / 'catalog.db'}",
        "--warehouse",
        str(tmp_path / "warehouse"),
        "--port",
        str(port),
        "--prefix",
        "main",
        "--table-default",
        "format-version=2",
        "--log-level",
        "warning",
    ]
    env = {**os.environ, "FIRN_REST_TOKEN": "s3cret"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_until_serving(url, process, "s3cret")
        catalog = firn.load_catalog(f"rest+{url}", token="s3cret")
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2]}))
        assert table.format_version == 2 and table.scan().count() == 2
        assert catalog.properties["prefix"] == "main"
        assert httpx.get(f"{url}/v1/main/namespaces").status_code == 401  # the token is required
        catalog.close()  # type: ignore[attr-defined]
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover - never leave a server behind
            process.kill()
            process.wait(10)
        assert process.stderr is not None
        process.stderr.close()
    served = firn.load_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    assert served.load_table("db.t").scan().count() == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve"], "Missing option '--catalog'"),
        (
            ["serve", "--catalog", "memory://", "--table-default", "novalue"],
            "--table-default must be KEY=VALUE",
        ),
        (
            ["serve", "--catalog", "memory://", "--oauth-client", "nosecret"],
            "--oauth-client: an OAuth2 client must be written ID:SECRET",
        ),
        (["serve", "--catalog", "memory://", "--port", "70000"], "70000 is not in the range"),
    ],
)
def test_serve_rejects_bad_options(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and message in result.output
