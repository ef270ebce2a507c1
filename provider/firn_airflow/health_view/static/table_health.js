// Firn table-health page: fetches the plugin's JSON routes (relative URLs, so the page works
// under any mount prefix) and draws the charts with the vendored uPlot.
"use strict";

(function () {
  const COLORS = ["#1f77b4", "#d62728"];
  const OVERVIEW_FIELDS = [
    "snapshots", "data_files", "small_files", "deletion_vectors", "delete_ratio", "root_entries",
  ];
  const params = new URLSearchParams(window.location.search);
  const state = { conn: params.get("conn_id") || "", table: params.get("table") || "", plots: [] };

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    });
    (children || []).forEach((c) => node.appendChild(c));
    return node;
  }

  // Every value the page shows arrives as text from the server, formatted by
  // firn.maintenance.present (the formatter the CLI and the demo use). Only chart ticks and the
  // chart legend are computed here; they use the same 24-hour UTC form as Airflow.
  function utcText(seconds) {
    return `${new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC`;
  }

  // Axis ticks: the date where the day changes (and at the first tick), then 24-hour times,
  // with seconds when ticks are less than a minute apart.
  function axisTicks(u, splits) {
    const step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 60;
    let lastDay = null;
    return splits.map((s) => {
      const iso = new Date(s * 1000).toISOString();
      const day = iso.slice(5, 10);
      const time = iso.slice(11, step < 60 ? 19 : 16);
      const text = day !== lastDay ? `${day}\n${time}` : time;
      lastDay = day;
      return text;
    });
  }

  function textOf(display, key) {
    const found = (display || []).find((d) => d.key === key);
    return found ? found.text : "–";
  }

  function setStatus(text, pageState) {
    document.getElementById("status").textContent = text;
    if (pageState) document.body.dataset.state = pageState;
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(body.detail ? String(body.detail) : `${response.status} ${response.statusText}`);
    }
    return body;
  }

  function recommendationNames(recs) {
    if (recs.error) return [el("span", { class: "error", text: "unavailable" })];
    if (!recs.value || recs.value.length === 0) return [el("span", { text: "nothing due" })];
    return recs.value.map((r) => el("span", { class: "badge", text: r.operation }));
  }

  async function loadConnections() {
    const body = await getJSON("api/connections");
    const select = document.getElementById("conn");
    const ids = body.connections.slice();
    if (!state.conn) state.conn = ids.includes(body.default) || ids.length === 0 ? body.default : ids[0];
    if (!ids.includes(state.conn)) ids.unshift(state.conn);
    select.replaceChildren(...ids.map((id) => el("option", { value: id, text: id })));
    select.value = state.conn;
  }

  function renderOverview(body) {
    const tbody = document.querySelector("#tables tbody");
    tbody.replaceChildren();
    body.tables.forEach((row) => {
      const cells = [el("td", { text: row.table })];
      if (row.error) {
        cells.push(el("td", { class: "text error", colspan: "8", text: row.error }));
      } else {
        cells.push(el("td", { text: `v${row.format_version}` }));
        OVERVIEW_FIELDS.forEach((f) => cells.push(el("td", { text: row.health.error ? "?" : textOf(row.health_display, f) })));
        cells.push(el("td", { class: "text" }, recommendationNames(row.recommendations)));
      }
      const tr = el("tr", { "data-table": row.table }, cells);
      tr.addEventListener("click", () => {
        selectTable(row.table).catch((err) => setStatus(`Error: ${err.message}`, "error"));
      });
      tbody.appendChild(tr);
    });
  }

  function renderMetrics(health, display) {
    const box = document.getElementById("metrics");
    if (health.error) {
      box.replaceChildren(el("p", { class: "error", text: `Health unavailable: ${health.error}` }));
      return;
    }
    box.replaceChildren(
      ...display.map((d) =>
        // A 19-digit id fits one line in a smaller font (and still wraps, never overflows).
        el("div", { class: "metric", "data-key": d.key }, [
          el("div", { class: "name", text: d.label }),
          el("div", { class: d.text.length > 14 ? "value long" : "value", text: d.text }),
        ]),
      ),
    );
  }

  function renderCharts(charts) {
    state.plots.forEach((p) => p.destroy());
    state.plots = [];
    const box = document.getElementById("charts");
    box.replaceChildren();
    let drawn = 0;
    charts.forEach((chart) => {
      const holder = el("div", { class: "chart", "data-chart": chart.id });
      box.appendChild(holder);
      if (chart.series.length === 0 || chart.x.length === 0) {
        holder.appendChild(el("div", { class: "empty", text: `${chart.title}: no data for this table` }));
        return;
      }
      const series = [{}].concat(
        chart.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          spanGaps: true,
          paths: s.kind === "points" ? () => null : undefined,
          points: { show: s.kind === "points" || chart.x.length < 3, size: 8, fill: COLORS[i % COLORS.length] },
        })),
      );
      const width = Math.max(320, holder.clientWidth - 8);
      series[0] = { label: "time (UTC)", value: (u, v) => (v === null || v === undefined ? "–" : utcText(v)) };
      const axes = [{ values: axisTicks, space: 60 }, {}];
      const plot = new uPlot(
        { title: chart.title, width: width, height: 220, scales: { x: { time: true } }, series: series, axes: axes },
        [chart.x].concat(chart.series.map((s) => s.values)),
        holder,
      );
      state.plots.push(plot);
      drawn += 1;
    });
    document.body.dataset.charts = String(drawn);
  }

  function renderRecommendations(recs) {
    const box = document.getElementById("recommendations");
    if (recs.error) {
      box.replaceChildren(el("p", { class: "error", text: `Unavailable: ${recs.error}` }));
    } else if (recs.value.length === 0) {
      box.replaceChildren(el("p", { text: "Nothing is due." }));
    } else {
      box.replaceChildren(
        el(
          "ul",
          { class: "recs" },
          recs.value.map((r) =>
            el("li", { "data-operation": r.operation }, [
              el("code", { text: `table.maintenance.${r.operation}(${r.options_text || ""})` }),
              el("p", { class: "reason", text: `Why: ${r.reason}` }),
              el("p", { class: "estimate meta", text: `Gain: ${r.estimate_text}` }),
            ]),
          ),
        ),
      );
    }
  }

  function renderEvents(events) {
    const box = document.getElementById("events");
    if (events.length === 0) {
      box.replaceChildren(el("p", { text: "No maintenance has been recorded for this table's asset yet." }));
      return;
    }
    // Text columns are left-aligned, headers included; counts stay right-aligned.
    const columns = [
      ["When", "text"], ["Operation", "text"], ["Dag / run / task", "text"], ["Result", "text"],
      ["Data files", ""], ["Small files", ""],
    ];
    const head = el("tr", {}, columns.map(([h, cls]) => el("th", cls ? { class: cls, text: h } : { text: h })));
    const rows = events.slice().reverse().map((e) => {
      const health = e.health_text || {};
      return el("tr", {}, [
        el("td", { class: "text", text: e.when }),
        el("td", { class: "text", text: e.operation || "–" }),
        el("td", { class: "text", text: [e.dag_id, e.run_id, e.task_id].filter(Boolean).join(" / ") || "–" }),
        el("td", { class: "text", text: e.result_text }),
        el("td", { text: health.data_files || "–" }),
        el("td", { text: health.small_files || "–" }),
      ]);
    });
    box.replaceChildren(el("table", { class: "grid" }, [el("thead", {}, [head]), el("tbody", {}, rows)]));
  }

  async function selectTable(name) {
    state.table = name;
    document.querySelectorAll("#tables tbody tr").forEach((tr) => {
      tr.classList.toggle("selected", tr.dataset.table === name);
    });
    setStatus(`Loading ${name}…`, "loading");
    const url = `api/tables/${encodeURIComponent(name)}?conn_id=${encodeURIComponent(state.conn)}`;
    const body = await getJSON(url);
    document.getElementById("detail").hidden = false;
    document.getElementById("detail-title").textContent = body.table;
    document.getElementById("detail-meta").textContent =
      `format v${body.format_version} · ${body.snapshots.length} snapshots on the current branch · asset ${body.asset_uri}`;
    renderMetrics(body.health, body.health_display);
    renderCharts(body.charts);
    renderRecommendations(body.recommendations);
    renderEvents(body.events);
    setStatus(`Connection ${state.conn}: ${body.table}`, "ready");
  }

  async function load() {
    try {
      setStatus("Loading…", "loading");
      await loadConnections();
      const body = await getJSON(`api/tables?conn_id=${encodeURIComponent(state.conn)}`);
      renderOverview(body);
      if (body.tables.length === 0) {
        document.getElementById("detail").hidden = true;
        setStatus(`Catalog ${body.catalog} (${body.catalog_uri}) has no tables.`, "ready");
        return;
      }
      const names = body.tables.map((t) => t.table);
      await selectTable(names.includes(state.table) ? state.table : names[0]);
    } catch (err) {
      setStatus(`Error: ${err.message}`, "error");
    }
  }

  // The chart formatters and plots, for the page's tests.
  window.firnTableHealth = { utcText: utcText, axisTicks: axisTicks, plots: () => state.plots };

  document.getElementById("conn").addEventListener("change", (event) => {
    state.conn = event.target.value;
    state.table = "";
    load();
  });
  document.getElementById("reload").addEventListener("click", load);
  load();
})();
