"""``firn serve``: the real command in a subprocess, used by Firn's client, then stopped; its
secrets from files and the environment (never in ``ps``), and its exposure rules."""

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
from firn.errors import ValidationError
from firn.rest.serve import (
    OAUTH_CLIENTS_ENV,
    TOKEN_ENV,
    check_exposure,
    default_allowed_hosts,
    load_secrets,
)


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


# -- secrets never on the command line (issue 18) ---------------------------------------------------
def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "firn.cli", "serve", *args, "--log-level", "warning"]
    return subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _stop(process: subprocess.Popen[bytes]) -> str:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:  # pragma: no cover - never leave a server behind
        process.kill()
        process.wait(10)
    assert process.stderr is not None
    text = process.stderr.read().decode()
    process.stderr.close()
    return text


def test_secrets_from_files_never_show_in_ps(tmp_path: Path) -> None:
    token, secret = "file-token-2718", "file-secret-3141"
    token_file, clients_file = tmp_path / "token", tmp_path / "clients"
    token_file.write_text(token + "\n")
    clients_file.write_text(f"# clients of the catalog\n\netl:{secret}\n")
    for f in (token_file, clients_file):
        f.chmod(0o600)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _start(
        [
            "--catalog", f"sqlite:///{tmp_path / 'catalog.db'}", "--warehouse", str(tmp_path / "wh"),
            "--port", str(port), "--token-file", str(token_file), "--oauth-client-file", str(clients_file),
        ]
    )  # fmt: skip
    try:
        _wait_until_serving(url, process, token)
        # What every user of the machine sees: `ps` reads /proc/<pid>/cmdline.
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert "--token-file" in cmdline and token not in cmdline and secret not in cmdline
        ps = subprocess.run(
            ["ps", "-ww", "-o", "args=", "-p", str(process.pid)], capture_output=True, text=True
        )
        if ps.returncode == 0:  # procps is not everywhere
            assert "serve" in ps.stdout and token not in ps.stdout and secret not in ps.stdout
        by = {"by_token": {"token": token}, "by_client": {"credential": f"etl:{secret}"}}
        for namespace, credentials in by.items():
            catalog = firn.load_catalog(f"rest+{url}", **credentials)
            catalog.create_namespace(namespace)
            catalog.close()  # type: ignore[attr-defined]
        assert httpx.get(f"{url}/v1/namespaces").status_code == 401
    finally:
        stderr = _stop(process)
    assert token not in stderr and secret not in stderr
    assert "warning" not in stderr  # files of mode 600: nothing to warn about


def test_oauth_clients_from_the_environment(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"FIRN_REST_OAUTH_CLIENTS": "etl:env-secret-1 spark:env-secret-2"}
    process = _start(["--catalog", f"sqlite:///{tmp_path / 'c.db'}", "--port", str(port)], env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/config").status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "firn serve did not start"
            time.sleep(0.1)
        for client in ("etl:env-secret-1", "spark:env-secret-2"):
            catalog = firn.load_catalog(f"rest+{url}", credential=client)
            assert catalog.list_namespaces() == []
            catalog.close()  # type: ignore[attr-defined]
    finally:
        _stop(process)


def test_secrets_on_the_command_line_warn() -> None:
    # The catalog URI is refused after the secrets are read: the warnings show, nothing serves.
    result = CliRunner().invoke(
        main, ["serve", "--catalog", "bogus://x", "--token", "argv-token-1", "--oauth-client", "etl:argv-2"]
    )
    assert result.exit_code == 2
    assert "--token puts a secret on the command line" in result.stderr
    assert "--oauth-client puts a secret on the command line" in result.stderr
    assert "argv-token-1" not in result.output and "argv-2" not in result.output


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_no_authentication_beyond_loopback_needs_insecure(tmp_path: Path, host: str) -> None:
    result = CliRunner(env={"FIRN_REST_TOKEN": None, "FIRN_REST_OAUTH_CLIENTS": None}).invoke(
        main, ["serve", "--catalog", f"sqlite:///{tmp_path / 'c.db'}", "--host", host]
    )
    assert result.exit_code == 2
    assert f"refusing to serve {host}:8181 without authentication" in result.stderr
    assert "--insecure" in result.stderr
    assert not (tmp_path / "c.db").exists()  # refused before the catalog was even opened


def test_insecure_serves_and_warns(tmp_path: Path) -> None:
    port = _free_port()
    process = _start(
        [
            "--catalog",
            f"sqlite:///{tmp_path / 'c.db'}",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--insecure",
        ],
        {"FIRN_REST_TOKEN": "", "FIRN_REST_OAUTH_CLIENTS": ""},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/config").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "firn serve did not start"
            time.sleep(0.1)
        # Loopback names only, by default: a request naming another host is refused.
        other = httpx.get(f"http://127.0.0.1:{port}/v1/config", headers={"Host": "catalog.example"})
        assert other.status_code == 400
    finally:
        stderr = _stop(process)
    assert "warning: serving without authentication" in stderr
    assert "over plain HTTP" in stderr and "--allowed-host" in stderr


def test_load_secrets(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  tok-1  \n")
    token_file.chmod(0o644)
    secrets = load_secrets(token_file=str(token_file), environ={})
    assert secrets.token == "tok-1" and secrets.authenticated
    assert any("can be read by other users" in w and "chmod 600" in w for w in secrets.warnings)
    assert "tok-1" not in repr(secrets)
    assert load_secrets(environ={TOKEN_ENV: "env-tok"}).token == "env-tok"
    assert not load_secrets(environ={}).authenticated
    with pytest.raises(ValidationError, match=r"given more than once \(--token-file, FIRN_REST_TOKEN\)"):
        load_secrets(token_file=str(token_file), environ={TOKEN_ENV: "x"})
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ValidationError, match="is empty"):
        load_secrets(token_file=str(empty), environ={})
    with pytest.raises(ValidationError, match="cannot read the token file"):
        load_secrets(token_file=str(tmp_path / "missing"), environ={})
    clients = tmp_path / "clients"
    clients.write_text("# comment\netl:s:e:c\n\n  spark:two  \n")
    clients.chmod(0o600)
    loaded = load_secrets(oauth_client_file=str(clients), environ={OAUTH_CLIENTS_ENV: "env:three"})
    assert dict(loaded.oauth_clients) == {"etl": "s:e:c", "spark": "two", "env": "three"}
    assert loaded.warnings == ()
    clients.write_text("etl:one\nbroken-secret-99\n")
    with pytest.raises(
        ValidationError, match=r"clients line 2: an OAuth2 client must be written ID:SECRET"
    ) as info:
        load_secrets(oauth_client_file=str(clients), environ={})
    assert "broken-secret-99" not in str(info.value)
    with pytest.raises(ValidationError, match="given twice with different secrets"):
        load_secrets(oauth_clients=["etl:a"], environ={OAUTH_CLIENTS_ENV: "etl:b"})


def test_exposure_rules() -> None:
    loop = ("localhost", "127.0.0.1", "::1")
    assert check_exposure("127.0.0.1", 1, authenticated=True, insecure=False, allowed_hosts=loop) == []
    (only,) = check_exposure("localhost", 1, authenticated=False, insecure=False, allowed_hosts=loop)
    assert "without authentication" in only
    notes = check_exposure(
        "10.1.2.3", 1, authenticated=True, insecure=False, allowed_hosts=(*loop, "10.1.2.3")
    )
    assert len(notes) == 1 and "plain HTTP" in notes[0]
    assert default_allowed_hosts("10.1.2.3") == (*loop, "10.1.2.3")
    assert default_allowed_hosts("0.0.0.0") == loop == default_allowed_hosts("127.0.0.1")
