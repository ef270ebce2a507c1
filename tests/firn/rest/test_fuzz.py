"""A fuzz pass over the REST server: no request, however broken, gets a 500.

Every operation of the server's own OpenAPI document (``app.openapi()``) is exercised. The
request bodies start from real ones: the bodies Firn's REST client sends while it creates,
writes, evolves, renames and registers tables and views, recorded by an ASGI middleware in front
of the server. Hypothesis then breaks one of them anywhere in its tree (a value replaced by
arbitrary JSON or an edge value, a key dropped or added, a list item dropped or repeated,
``requirements`` emptied so that broken updates reach the metadata builder) and sends it, or
sends arbitrary JSON, with arbitrary path and query parameters. Each answer must be below 500,
and every error must be in the spec's error model. The values drawn include lone surrogates
(valid JSON escapes that are no Unicode text) in bodies and paths, and locations that must
never be read or written: devices (``/dev/zero`` never ends), ``/proc/self/...`` and
``file://`` forms of them.

The server is the real one (uvicorn on 127.0.0.1, a SQLite catalog). ``derandomize`` keeps the
examples fixed between runs; set ``FIRN_FUZZ_EXAMPLES`` (default 100 per test) and
``FIRN_FUZZ_RANDOM=1`` for a longer, random pass.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import firn
from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.rest import app
from firn.spec.types import StringType
from firn.views import with_field_aliases
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rest import running_server

EXAMPLES = int(os.environ.get("FIRN_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("FIRN_FUZZ_RANDOM") != "1",
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SEPARATOR = "\x1f"


@dataclass
class Recorder:
    """ASGI middleware keeping the JSON body of every POST it passes on, by route template."""

    app: Any
    bodies: dict[str, list[Any]] = field(default_factory=dict)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        if raw:
            self.bodies.setdefault(_template(scope["path"]), []).append(json.loads(raw))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app(scope, replay, send)


def _template(path: str) -> str:
    """``/v1/namespaces/db/tables/t/metrics`` -> ``/v1/namespaces/{namespace}/tables/{table}/metrics``."""
    parts = path.split("/")
    names = {"namespaces": "{namespace}", "tables": "{table}", "views": "{view}"}
    out = []
    for i, part in enumerate(parts):
        previous = parts[i - 1] if i else ""
        out.append(names[previous] if previous in names and part not in ("rename",) else part)
    return "/".join(out)


def _client_session(catalog: RestCatalog) -> None:
    """What a Firn user does over REST: every POST route with a real body."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())])
    catalog.create_namespace("db", {"owner": "fuzz"})
    catalog.update_namespace_properties("db", removals={"owner"}, updates={"team": "x"})
    t = catalog.create_table(
        "db.t", schema, partition_spec=[("region", "identity")], properties={"format-version": "2"}
    )
    t.append(pa.table({"id": [1, 2, 3], "region": ["eu", "us", "eu"]}, schema=schema))
    t.delete("id = 2")
    with t.update_schema() as update:
        update.add_column("note", StringType())
    with t.update_spec() as spec:
        spec.remove_field("region")
    t.set_properties({"k": "v"})
    t.remove_properties("k")
    snapshot = t.current_snapshot()
    assert snapshot is not None
    with t.manage_snapshots() as refs:
        refs.create_tag("tag", snapshot.snapshot_id)
        refs.create_branch("audit", snapshot.snapshot_id)
    t.upgrade(format_version=3)
    catalog.create_table("db.moved", schema, properties={"format-version": "2"})
    catalog.rename_table("db.moved", "db.renamed")
    location = catalog.load_table("db.renamed").metadata_location
    catalog.drop_table("db.renamed")
    catalog.register_table("db.renamed", location)
    view_schema = pa.schema([("region", pa.string()), ("n", pa.int64())])
    v = catalog.create_view("db.v", view_schema, "SELECT region, count(*) FROM t GROUP BY region")
    aliased = with_field_aliases(v.schema(), ["area", "count"], ["Region", None])
    catalog.replace_view(
        "db.v", aliased, {"spark": "SELECT region, count(*) FROM t GROUP BY 1", "trino": "x"}
    )
    catalog.update_view_properties("db.v", {"replace.drop-dialect.allowed": "true"}, {"nope"})
    catalog.rollback_view("db.v", 1)
    catalog.create_view("db.w", view_schema, "SELECT 1, 2")
    catalog.rename_view("db.w", "db.w2")
    view_location = catalog.load_view("db.w2").metadata_location
    catalog.drop_view("db.w2")
    catalog.register_view("db.w2", view_location)


@dataclass
class Fuzzed:
    client: httpx.Client
    operations: list[tuple[str, str, dict[str, Any]]]  # (method, path template, OpenAPI operation)
    seeds: dict[str, list[Any]]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    catalog: SqlCatalog = make_sqlite_catalog(tmp_path_factory.mktemp("rest-fuzz"))
    recorders: list[Recorder] = []

    def wrap(inner: Any) -> Recorder:
        recorders.append(Recorder(inner))
        return recorders[0]

    with running_server(catalog, wrap=wrap) as server:
        client = firn.load_catalog(server.rest_uri)
        assert isinstance(client, RestCatalog)
        try:
            _client_session(client)
        finally:
            client.close()
    seeds = recorders[0].bodies
    seeds.setdefault("/v1/namespaces/{namespace}/tables/{table}/metrics", []).append(
        {"report-type": "scan-report", "table-name": "db.t", "snapshot-id": 1, "metrics": {}}
    )
    seeds.setdefault("/v1/oauth/tokens", [])
    operations = [
        (method.upper(), path, operation)
        for path, item in app(catalog).openapi()["paths"].items()
        for method, operation in item.items()
    ]
    # A fuzzed request may name a relative location: keep what it writes out of the work tree.
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("rest-fuzz-cwd"))
    try:
        with running_server(catalog) as server, httpx.Client(base_url=server.url, timeout=60) as http:
            yield Fuzzed(http, operations, seeds)
    finally:
        os.chdir(cwd)
        catalog.close()


def test_the_recorded_session_covers_every_post_route(fuzzed: Fuzzed) -> None:
    posts = {path for method, path, _ in fuzzed.operations if method == "POST"}
    # Not sent by Firn's client: tokens (form-encoded), multi-table transactions (406).
    assert posts - set(fuzzed.seeds) == {"/v1/transactions/commit"}
    assert len(fuzzed.seeds["/v1/namespaces/{namespace}/tables/{table}"]) >= 8  # table commits
    assert len(fuzzed.seeds["/v1/namespaces/{namespace}/views/{view}"]) >= 3  # view commits


# -- strategies ------------------------------------------------------------------------------------
# Lone surrogates: json.dumps writes them as \ud800-style escapes, which json.loads accepts.
SURROGATES = ["\ud800", "\udfff", "x\udbffy", "\udc00\ud800", "\ud83d"]
# Locations no request may make the server read or write (issue 18 findings 6 and 7).
DEVICE_PATHS = [
    "/dev/zero", "file:///dev/zero", "/dev/urandom", "/dev/null", "/dev/null/t", "/proc/self/environ",
    "/proc/self/fd/0", "/proc/self/t", "file:/proc/self/status", "/proc/self/mem",
]  # fmt: skip
EDGE_VALUES = [
    None, True, False, 0, -1, 1, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 10**30, 1.5, -0.0, 1e308,
    math.inf, math.nan, "", " ", "\x00", "x" * 10_000, "é🙂", "-1", "NaN", "main", "db", SEPARATOR,
    [], {}, [None], {"": None}, [[[[[[]]]]]], *SURROGATES, *DEVICE_PATHS,
]  # fmt: skip
# Text that may hold lone surrogates (Hypothesis's text() leaves category Cs out).
SURROGATE_TEXT = st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=12
)
KEYS = st.sampled_from(
    ["", "action", "type", "schema-id", "snapshot-id", "spec-id", "fields", "id", "name", "uuid",
     "format-version", "location", "updates", "removals", "view-version", "ref", "extra",
     "metadata-location", "write.data.path", "write.metadata.path"]
) | st.text(max_size=12) | SURROGATE_TEXT  # fmt: skip
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=30)
    | SURROGATE_TEXT
    | st.sampled_from(EDGE_VALUES),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _nodes(value, (*path, i))


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = _replace(doc[head], rest, value)
    return copy


_DELETE = object()


def _mutate(data: st.DataObject, doc: Any) -> Any:
    """One structural change somewhere in ``doc``."""
    # The root is left out: replacing a whole body only tests the request model, which the
    # arbitrary-JSON test below does; the Iceberg objects inside are where readers can slip.
    nodes = [n for n in _nodes(doc) if n[0]] or [((), doc)]
    path, node = data.draw(st.sampled_from(nodes), label="node")
    kind = data.draw(
        st.sampled_from(["value", "edge", "drop", "add", "repeat", "no-requirements"]), label="kind"
    )
    if kind == "value":
        return _replace(doc, path, data.draw(JSON, label="value"))
    if kind == "edge":
        return _replace(doc, path, data.draw(st.sampled_from(EDGE_VALUES), label="edge"))
    if kind == "drop" and isinstance(node, dict) and node:
        key = data.draw(st.sampled_from(sorted(node)), label="key")
        return _replace(doc, path, {k: v for k, v in node.items() if k != key})
    if kind == "drop" and isinstance(node, list) and node:
        i = data.draw(st.integers(0, len(node) - 1), label="index")
        return _replace(doc, path, node[:i] + node[i + 1 :])
    if kind == "add" and isinstance(node, dict):
        return _replace(doc, path, {**node, data.draw(KEYS, label="key"): data.draw(JSON, label="value")})
    if kind == "repeat" and isinstance(node, list) and node:
        return _replace(doc, path, [*node, node[-1]])
    if kind == "no-requirements" and isinstance(doc, dict) and "requirements" in doc:
        # Requirements usually stop a stale change with a 409 before its updates are applied;
        # without them the broken updates reach the metadata builder.
        return {**doc, "requirements": []}
    return _replace(doc, path, data.draw(st.sampled_from(EDGE_VALUES), label="edge"))


def _path_value(data: st.DataObject, name: str) -> str:
    known = {"namespace": ["db", "nope", f"db{SEPARATOR}sub", "", SEPARATOR], "table": ["t", "renamed", "v"],
             "view": ["v", "w2", "t"]}.get(name, ["x"])  # fmt: skip
    value = data.draw(
        st.sampled_from(known) | st.text(max_size=20) | SURROGATE_TEXT | st.sampled_from(SURROGATES),
        label=name,
    )
    # A lone surrogate goes out as the (invalid) UTF-8 bytes a careless client would send.
    return quote(value, safe="", errors="surrogatepass") or "%20"


def _query(data: st.DataObject, operation: dict[str, Any]) -> dict[str, str]:
    params = {}
    for parameter in operation.get("parameters", []):
        if parameter.get("in") != "query" or not data.draw(st.booleans(), label=f"send {parameter['name']}"):
            continue
        value = data.draw(
            st.sampled_from(["", "0", "-1", "2", "true", "false", "all", "refs", "x", "99999999999999999999"])
            | st.text(max_size=10),
            label=parameter["name"],
        )
        params[parameter["name"]] = value
    return params


def _check(response: Any, method: str, path: str, body: Any) -> None:
    where = f"{method} {path} {json.dumps(body, allow_nan=True)[:2000]}"
    assert response.status_code < 500, f"{where} -> {response.status_code} {response.text[:2000]}"
    if response.status_code >= 400 and method != "HEAD":
        error = response.json()["error"]
        if path == "/v1/oauth/tokens":  # the spec's OAuthError: RFC 6749's error code string
            assert isinstance(error, str) and error, where
        else:
            assert set(error) == {"message", "type", "code"}, where
            assert error["code"] == response.status_code, where


BODY_ROUTES = [
    "/v1/namespaces",
    "/v1/namespaces/{namespace}/properties",
    "/v1/namespaces/{namespace}/tables",
    "/v1/namespaces/{namespace}/tables/{table}",
    "/v1/namespaces/{namespace}/register",
    "/v1/namespaces/{namespace}/tables/{table}/metrics",
    "/v1/tables/rename",
    "/v1/namespaces/{namespace}/views",
    "/v1/namespaces/{namespace}/views/{view}",
    "/v1/namespaces/{namespace}/register-view",
    "/v1/views/rename",
]


@pytest.mark.parametrize("template", BODY_ROUTES)
@FUZZ
@given(data=st.data())
def test_broken_bodies_never_get_a_500(fuzzed: Fuzzed, template: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(fuzzed.seeds[template]), label="seed")
    body = seed
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        body = _mutate(data, body)
    path = template.format(namespace="db", table="t", view="v")
    content = json.dumps(body, allow_nan=True).encode()
    response = fuzzed.client.post(path, content=content, headers={"Content-Type": "application/json"})
    _check(response, "POST", path, body)


@FUZZ
@given(data=st.data())
def test_any_operation_with_any_parameters_never_gets_a_500(fuzzed: Fuzzed, data: st.DataObject) -> None:
    method, template, operation = data.draw(st.sampled_from(fuzzed.operations), label="operation")
    names = [part[1:-1] for part in template.split("/") if part.startswith("{")]
    path = template.format(**{name: _path_value(data, name) for name in names})
    if method == "DELETE":  # keep the seeded tables and views for the other examples
        path = path.rstrip("/") + "-fz"
    params = _query(data, operation)
    body: Any = None
    kwargs: dict[str, Any] = {"params": params}
    if method == "POST":
        seeds = fuzzed.seeds.get(template) or [{}]
        body = data.draw(JSON | st.sampled_from(seeds), label="body")
        kwargs["content"] = json.dumps(body, allow_nan=True).encode()
        kwargs["headers"] = {"Content-Type": "application/json"}
    response = fuzzed.client.request(method, path, **kwargs)
    _check(response, method, path, body)


# The body fields that name a location or a name, by route; each gets every device path and
# lone surrogate below (set when the recorded body lacks it, as location does on a create).
TARGETS = {
    "/v1/namespaces": ("namespace",),
    "/v1/namespaces/{namespace}/tables": ("name", "location"),
    "/v1/namespaces/{namespace}/views": ("name", "location"),
    "/v1/namespaces/{namespace}/register": ("name", "metadata-location"),
    "/v1/namespaces/{namespace}/register-view": ("name", "metadata-location"),
    "/v1/namespaces/{namespace}/properties": ("updates",),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("value", DEVICE_PATHS + SURROGATES)
def test_device_paths_and_surrogates_in_every_location_and_name(fuzzed: Fuzzed, value: str) -> None:
    """Deterministically, not only when Hypothesis draws them: each device path and lone
    surrogate as the location, metadata location and name of every create and register, a
    namespace, a property, and a table's new location in a commit."""
    sent: list[tuple[str, Any]] = []
    for template, keys in TARGETS.items():
        path = template.format(namespace="db", table="t", view="v")
        for seed in fuzzed.seeds[template][:2]:
            for key in keys:
                shaped: Any = {"namespace": [value], "updates": {"k": value}}.get(key, value)
                sent.append((path, {**seed, key: shaped}))
    for location in (value, f"{value}/sub"):
        update = {"action": "set-location", "location": location}
        sent.append(("/v1/namespaces/db/tables/t", {"requirements": [], "updates": [update]}))
        props = {"action": "set-properties", "updates": {"write.data.path": location}}
        sent.append(("/v1/namespaces/db/tables/t", {"requirements": [], "updates": [props]}))
    for path, body in sent:
        content = json.dumps(body).encode()
        response = fuzzed.client.post(path, content=content, headers={"Content-Type": "application/json"})
        _check(response, "POST", path, body)
    assert len(sent) >= 14


def test_a_fuzzed_server_still_serves(fuzzed: Fuzzed, tmp_path: Path) -> None:
    """After the fuzzing, the catalog is intact: tables and views load and read."""
    client = fuzzed.client
    tables = client.get("/v1/namespaces/db/tables").json()["identifiers"]
    assert {"namespace": ["db"], "name": "t"} in tables
    assert client.get("/v1/namespaces/db/tables/t").status_code == 200
    assert client.get("/v1/namespaces/db/views/v").status_code == 200
