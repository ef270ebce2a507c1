"""The table-health view served by the real Airflow API server, over a real SQLite catalog with
a real maintenance history (asset events from dag.test() runs), rendered in headless Chromium.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

import firn
from firn_airflow.health_view.data import MAX_SAFE_INTEGER
from tests.fixtures.airflow import load_test_dag
from tests.fixtures.chromium import artifact_dir, chromium_page

pytestmark = pytest.mark.airflow

CONN_ID = "firn_health"  # the connection tests/firn_airflow/dags/firn_test_health_events.py uses
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string())])
MOR = {"write.delete.mode": "merge-on-read"}


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "region": [("eu", "us")[i % 2] for i in ids]}, schema=SCHEMA
    )


@pytest.fixture(scope="module")
def health_catalog(tmp_path_factory: pytest.TempPathFactory, airflow_home: Path) -> Iterator[Path]:
    """A SQLite catalog (v2 position deletes, v3 DVs, V4 root entries, an empty table) behind
    the ``firn_health`` connection, with two flush_root asset events on ``db.events_v4``."""
    root = tmp_path_factory.mktemp("health")
    catalog = firn.load_catalog(f"sqlite:///{root / 'catalog.db'}", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    catalog.create_namespace("ops")
    for name, version in (("db.events_v2", 2), ("db.events_v3", 3), ("db.events_v4", 4)):
        # A lower threshold than the default 10%, so the 3 deleted rows of 40 are worth a rewrite.
        properties = {
            "format-version": str(version),
            **MOR,
            "maintenance.rewrite-dvs.min-delete-ratio": "0.05",
        }
        table = catalog.create_table(name, SCHEMA, properties=properties)
        for batch in range(4):
            table.append(_rows(batch * 10, 10))
        table.delete("id < 3")
    catalog.create_table("ops.empty", SCHEMA, properties={"format-version": "2"})

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(
            f"AIRFLOW_CONN_{CONN_ID.upper()}",
            json.dumps(
                {
                    "conn_type": "firn",
                    "host": f"sqlite:///{root / 'catalog.db'}",
                    "extra": {"warehouse": str(root / "wh")},
                }
            ),
        )
        dag = load_test_dag("firn_test_health_events")
        assert dag.test().state == "success"
        v4 = catalog.load_table("db.events_v4")
        v4.append(_rows(100, 5))
        v4.append(_rows(105, 5))
        assert dag.test().state == "success"
        # After the second flush: a root of more than one data file is worth a flush, so
        # recommend() says flush_root for the two appends that follow.
        v4.refresh().set_properties({"commit.root.max-data-files": "1"})
        v4.append(_rows(110, 5))
        v4.append(_rows(115, 5))
        catalog.close()
        yield root


def test_json_routes_report_tables_health_history_and_events(
    airflow_api_server: str, health_catalog: Path
) -> None:
    with httpx.Client(base_url=f"{airflow_api_server}/firn", timeout=60) as client:
        conns = client.get("/api/connections").json()
        assert conns["default"] == "firn_default"
        assert CONN_ID in conns["connections"]

        listing = client.get("/api/tables", params={"conn_id": CONN_ID}).json()
        rows = {r["table"]: r for r in listing["tables"]}
        assert sorted(rows) == ["db.events_v2", "db.events_v3", "db.events_v4", "ops.empty"]
        assert listing["catalog"] == "default"
        v3 = rows["db.events_v3"]["health"]["value"]
        assert v3["data_files"] == 4 and v3["deletion_vectors"] == 1 and v3["position_deletes"] == 3
        v2 = rows["db.events_v2"]["health"]["value"]
        assert v2["deletion_vectors"] == 0 and v2["position_delete_files"] == 1
        assert rows["ops.empty"]["health"]["value"]["data_files"] == 0
        # 3 of 40 rows deleted, above the table's 5%: compaction of the files over it (issue 20).
        (v3_rec,) = rows["db.events_v3"]["recommendations"]["value"]
        assert v3_rec["operation"] == "rewrite_data_files"
        assert v3_rec["options"]["delete-ratio-threshold"] == 0.05
        assert v3_rec["options_text"] == "delete_ratio_threshold=0.05, remove_dangling_deletes=True"
        assert v3_rec["estimate_text"].startswith("The table tracks about 1 fewer file;")
        shown = {d["key"]: d for d in rows["db.events_v3"]["health_display"]}
        assert shown["delete_ratio"]["label"] == "delete ratio" and shown["delete_ratio"]["text"] == "7.5%"

        detail = client.get("/api/tables/db.events_v4", params={"conn_id": CONN_ID}).json()
        assert detail["asset_uri"] == f"firn://{CONN_ID}/db/events_v4"
        ops = [s["operation"] for s in detail["snapshots"]]
        assert ops[:4] == ["append"] * 4 and ops.count("append") == 8
        assert [s["data_files"] for s in detail["snapshots"]][:4] == [1, 2, 3, 4]
        assert all(s["root_entries"] is not None for s in detail["snapshots"])
        events = detail["events"]
        assert [e["operation"] for e in events] == ["flush_root", "flush_root"]
        assert all(e["dag_id"] == "firn_test_health_events" and e["task_id"] == "flush_root" for e in events)
        assert events[0]["result"]["data_files_moved"] >= 4
        assert events[1]["health"]["data_files"] == events[0]["health"]["data_files"] + 2
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", events[0]["when"])
        assert "data files moved" in events[0]["result_text"]
        assert events[1]["health_text"]["data_files"] == f"{events[1]['health']['data_files']:,}"
        charts = {c["id"]: c for c in detail["charts"]}
        assert set(charts) == {"snapshots", "data_files", "small_files", "deletes", "root_entries"}
        for chart in charts.values():
            assert chart["series"], chart["id"]
            assert all(len(s["values"]) == len(chart["x"]) for s in chart["series"])
        # small files exist only as measurements: two events plus "now"
        (small,) = charts["small_files"]["series"]
        assert small["kind"] == "points" and sum(v is not None for v in small["values"]) == 3

        missing = client.get("/api/tables/db.nope", params={"conn_id": CONN_ID})
        assert missing.status_code == 404
        assert "table 'db.nope' does not exist" in missing.json()["detail"]
        no_conn = client.get("/api/tables", params={"conn_id": "firn_missing"})
        assert no_conn.status_code == 404
        assert "Firn connection 'firn_missing' is not defined" in no_conn.json()["detail"]


def _current_snapshot_id(root: Path, table: str) -> int:
    catalog = firn.load_catalog(f"sqlite:///{root / 'catalog.db'}", warehouse=str(root / "wh"))
    try:
        snapshot = catalog.load_table(table).metadata.current_snapshot()
        assert snapshot is not None
        return snapshot.snapshot_id
    finally:
        catalog.close()


# Per column of a table: where the header's text and the first body row's text start and end.
_COLUMN_TEXT_EDGES = """(selector) => {
  const table = document.querySelector(selector);
  const edges = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = Array.from(range.getClientRects());
    return [Math.min(...rects.map((r) => r.left)), Math.max(...rects.map((r) => r.right))];
  };
  const heads = Array.from(table.querySelectorAll("thead th"));
  const cells = Array.from(table.querySelector("tbody tr").children);
  return heads.map((th, i) => [th.textContent, getComputedStyle(cells[i]).textAlign, edges(th), edges(cells[i])]);
}"""


def test_page_draws_every_chart_in_chromium(airflow_api_server: str, health_catalog: Path) -> None:
    """Charts drawn, chart library local; values fit their boxes, ids digit for digit, ages as
    durations, headers over their columns (the screenshot CI keeps shows the same page)."""
    snapshot_id = _current_snapshot_id(health_catalog, "db.events_v4")
    url = f"{airflow_api_server}/firn/?conn_id={CONN_ID}&table=db.events_v4"
    with chromium_page() as page:
        page.goto(url)
        state = page.wait_for(
            "document.body && document.body.dataset.state !== 'loading' ? document.body.dataset.state : null",
            timeout=60,
        )
        assert state == "ready", page.evaluate("document.getElementById('status').textContent")
        assert page.evaluate("document.querySelectorAll('#tables tbody tr').length") == 4
        assert page.evaluate("document.getElementById('detail-title').textContent") == "db.events_v4"
        assert page.evaluate("document.querySelectorAll('.chart .uplot').length") == 5
        # Count, per chart canvas, the pixels in the first series' colour (#1f77b4): axes and
        # grid are grey, so these are the drawn data.
        coloured = page.evaluate(
            """Array.from(document.querySelectorAll('.chart')).map((chart) => {
                const canvas = chart.querySelector('canvas');
                const ctx = canvas.getContext('2d');
                const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
                let n = 0;
                for (let i = 0; i < px.length; i += 4) {
                  if (px[i + 3] > 200 && Math.abs(px[i] - 31) < 12 && Math.abs(px[i + 1] - 119) < 12
                      && Math.abs(px[i + 2] - 180) < 12) n++;
                }
                return [chart.dataset.chart, n];
            })"""
        )
        assert len(coloured) == 5
        for chart_id, pixels in coloured:
            assert pixels > 20, f"chart {chart_id} has no drawn series ({pixels} pixels)"
        assert page.evaluate("document.querySelectorAll('#events tbody tr').length") == 2
        assert "flush_root" in page.evaluate("document.getElementById('recommendations').textContent")
        # The chart library came from the plugin's static files, not a CDN.
        scripts = page.evaluate("Array.from(document.scripts).map((s) => s.src)")
        assert f"{airflow_api_server}/firn/static/uPlot.iife.min.js" in scripts
        assert all(s.startswith(airflow_api_server) for s in scripts)

        metrics = dict(
            page.evaluate(
                "Array.from(document.querySelectorAll('.metric')).map((m) => "
                "[m.dataset.key, m.querySelector('.value').textContent])"
            )
        )
        labels = page.evaluate(
            "Array.from(document.querySelectorAll('.metric .name')).map((n) => n.textContent)"
        )
        assert "oldest snapshot age" in labels and not any(label.endswith("_ms") for label in labels)
        # The id digit for digit (a JSON number would have lost its last digits).
        assert metrics["snapshot_id"] == str(snapshot_id)
        # Every value fits its box: nothing overflows into the next one.
        overflowing = page.evaluate(
            "Array.from(document.querySelectorAll('.metric')).filter((m) => "
            "m.scrollWidth > m.clientWidth + 1 || m.querySelector('.value').getBoundingClientRect().right "
            "> m.getBoundingClientRect().right).map((m) => m.querySelector('.name').textContent)"
        )
        assert overflowing == []
        # One presentation (firn.maintenance.present, as the CLI and the demo): ages as
        # durations, points in time 24-hour UTC, bytes in binary units, ratios as percentages.
        assert re.fullmatch(
            r"\d+ (ms|s|min|h|d)( \d+ (s|min|h))?|\d+\.\d s", metrics["oldest_snapshot_age_ms"]
        )
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", metrics["last_commit_ms"])
        assert re.fullmatch(r"[\d.]+ (B|KiB|MiB)", metrics["data_bytes"].replace(",", ""))
        assert re.fullmatch(r"\d+\.\d%", metrics["delete_ratio"])
        overview = page.evaluate(
            "Array.from(document.querySelectorAll('#tables tbody tr')).map((tr) => tr.textContent)"
        )
        assert any("7.5%" in row for row in overview)  # db.events_v3's delete ratio, as above
        # Estimates as sentences, options as Python keywords; no raw JSON.
        recs = page.evaluate("document.getElementById('recommendations').textContent")
        assert "Gain: " in recs and "Why: " in recs and "{" not in recs
        assert "table.maintenance.flush_root()" in recs
        # Charts: 24-hour UTC ticks and legend, as Airflow (no am/pm, no local time zone).
        ticks = page.evaluate(
            "(() => { const p = window.firnTableHealth.plots()[0]; "
            "return p.axes[0].values(p, [1795698300, 1795741200]); })()"
        )
        assert ticks == ["11-26\n13:05", "11-27\n01:00"]
        seconds = page.evaluate(
            "(() => { const p = window.firnTableHealth.plots()[0]; "
            "return p.axes[0].values(p, [1795698300, 1795698315, 1795698330]); })()"
        )
        assert seconds == ["11-26\n13:05:00", "13:05:15", "13:05:30"]  # ticks under a minute apart
        legend = page.evaluate(
            "(() => { const p = window.firnTableHealth.plots()[0]; return p.series[0].value(p, 1795698300); })()"
        )
        assert legend == "2026-11-26 13:05:00 UTC"
        axis_text = page.evaluate(
            "Array.from(document.querySelectorAll('.u-legend')).map((l) => l.textContent)"
        )
        assert not any(re.search(r"\b(am|pm)\b", t, re.IGNORECASE) for t in axis_text)

        # Headers sit over their column: text columns start where their cells' text starts,
        # number columns end where their cells' text ends.
        for selector in ("#events table", "#tables"):
            for name, align, (head_left, head_right), (cell_left, cell_right) in page.evaluate(
                f"({_COLUMN_TEXT_EDGES})({json.dumps(selector)})"
            ):
                if align in ("left", "start"):
                    assert abs(head_left - cell_left) < 2, (selector, name, head_left, cell_left)
                else:
                    assert abs(head_right - cell_right) < 2, (selector, name, head_right, cell_right)
        shot = page.screenshot(artifact_dir() / "firn-table-health.png")
    assert shot.stat().st_size > 10_000


def test_json_routes_send_ids_a_browser_cannot_hold_as_strings(
    airflow_api_server: str, health_catalog: Path
) -> None:
    snapshot_id = _current_snapshot_id(health_catalog, "db.events_v4")
    with httpx.Client(base_url=f"{airflow_api_server}/firn", timeout=60) as client:
        detail = client.get("/api/tables/db.events_v4", params={"conn_id": CONN_ID}).json()
    sent = detail["health"]["value"]["snapshot_id"]
    assert sent == (str(snapshot_id) if snapshot_id > MAX_SAFE_INTEGER else snapshot_id)
    assert str(detail["snapshots"][-1]["snapshot_id"]) == str(snapshot_id)
    assert isinstance(detail["health"]["value"]["data_files"], int)
