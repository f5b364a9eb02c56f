// costtrack dashboard: the "Unit costs" view. Loaded after uPlot, app.js and charts.js, whose
// helpers it uses ($, el, api, usd, number, tableRow, emptyRow, range, state, daysBefore,
// loading, failed, PALETTE). Per feature: the distribution of cost per run (the sketch's buckets
// from /v1/workspace/unit-costs, drawn as bars) with p50/p90/p99, their trend by week, the most
// expensive runs (each opening to its calls), and the anomalous runs: above the feature's p99 by
// a factor, or of more than a number of calls (/v1/workspace/runs?min_cost=&min_calls=).
"use strict";

const units = { groups: [], feature: null, plot: null, weeks: 8 };

function percentilesText(figures) {
  if (figures.p50 === null) return "No runs in this period.";
  return `p50 ${usd(figures.p50)} · p90 ${usd(figures.p90)} · p99 ${usd(figures.p99)} · max ${usd(figures.max)} · mean ${usd(figures.mean)}`;
}

function drawHistogram(group) {
  const container = $("units-chart");
  if (units.plot) units.plot.destroy();
  units.plot = null;
  container.replaceChildren();
  const buckets = group ? group.cost_per_run.histogram : [];
  if (!buckets.length) {
    container.append(el("p", "No runs in this period.", "empty"));
    return;
  }
  // One bar per bucket, at its upper bound on a log axis (a zero-cost bucket sits at the lowest).
  const floor = Math.min(...buckets.map((b) => Number(b.high)).filter((v) => v > 0), 1) / 2;
  const x = buckets.map((b) => (Number(b.high) > 0 ? Number(b.high) : floor));
  const runs = buckets.map((b) => b.runs);
  const options = {
    width: Math.max(container.clientWidth, 200),
    height: 200,
    series: [
      { label: "Cost per run", value: (_, v) => (v === null ? "–" : usd(v)) },
      {
        label: "Runs",
        fill: PALETTE[0],
        stroke: PALETTE[0],
        width: 0,
        paths: uPlot.paths.bars({ size: [0.9, 12], align: 0 }),
        points: { show: false },
      },
    ],
    scales: { x: { time: false, distr: 3 }, y: { range: (_, __, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [
      { stroke: "#5b6470", values: (_, splits) => splits.map((v) => usd(v)), grid: { show: false } },
      { stroke: "#5b6470", grid: { stroke: "#eceff3" } },
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
  };
  units.plot = new uPlot(options, [x, runs], container);
  container.setAttribute("aria-label", `Cost per run of ${group.key}: ${group.runs} runs, ${percentilesText(group.cost_per_run)}`);
}

function runRow(run, showCalls) {
  const open = el("button", run.trace_id, "link");
  open.type = "button";
  open.addEventListener("click", () => openRun(run.trace_id).catch(failed));
  const first = el("td");
  first.append(open);
  const row = tableRow(
    first,
    el("td", run.run_name || ""),
    el("td", number(run.total.calls), "num"),
    el("td", run.total.status),
    el("td", usd(run.total.cost), "num"),
  );
  if (showCalls) row.dataset.trace = run.trace_id;
  return row;
}

async function openRun(traceId) {
  const run = await api(`/v1/workspace/runs/${encodeURIComponent(traceId)}`);
  $("run-title").textContent =
    `Run ${run.trace_id}${run.run_name ? ` (${run.run_name})` : ""}: ${number(run.total.calls)} calls, ${usd(run.total.cost)}, ${run.total.status}`;
  const body = $("run-calls").querySelector("tbody");
  body.replaceChildren(
    ...run.calls.map((call) =>
      tableRow(
        el("td", call.received_at.replace("T", " ").replace("Z", "")),
        el("td", call.parent_id || ""),
        el("td", `${call.provider}/${call.model}`),
        el("td", call.status),
        el("td", usd(call.cost), "num"),
      ),
    ),
  );
  if (!run.calls.length) body.append(emptyRow(5, "No calls listed (expired)."));
  $("run-card").hidden = false;
}

async function loadWeeks(feature) {
  const body = $("units-weeks").querySelector("tbody");
  const weeks = [];
  for (let w = 0; w < units.weeks; w += 1) {
    const to = daysBefore(state.to, 7 * w);
    weeks.push([daysBefore(to, 6), to]);
  }
  const answers = await Promise.all(
    weeks.map(([from, to]) => api(`/v1/workspace/unit-costs?by=feature&from=${from}&to=${to}`)),
  );
  body.replaceChildren();
  answers.forEach((answer, i) => {
    const group = answer.groups.find((g) => g.key === feature);
    const figures = group ? group.cost_per_run : { p50: null, p90: null, p99: null };
    const cell = (value) => el("td", value === null ? "–" : usd(value), "num");
    body.append(tableRow(el("td", `${weeks[i][0]} to ${weeks[i][1]}`), el("td", number(group ? group.runs : 0), "num"), cell(figures.p50), cell(figures.p90), cell(figures.p99)));
  });
}

async function loadRuns(group) {
  const feature = encodeURIComponent(group.key);
  const factor = Number($("anomaly-factor").value) || 2;
  const calls = Math.max(1, Math.floor(Number($("anomaly-calls").value) || 100));
  const threshold = group.cost_per_run.p99 === null ? null : (Number(group.cost_per_run.p99) * factor).toFixed(12);
  const [top, costly, long] = await Promise.all([
    api(`/v1/workspace/runs?${range()}&feature=${feature}&sort=cost&limit=10`),
    threshold === null ? { runs: [] } : api(`/v1/workspace/runs?${range()}&feature=${feature}&min_cost=${threshold}&limit=50`),
    api(`/v1/workspace/runs?${range()}&feature=${feature}&min_calls=${calls}&limit=50`),
  ]);
  const topBody = $("top-runs").querySelector("tbody");
  topBody.replaceChildren(...top.runs.map((run) => runRow(run, true)));
  if (!top.runs.length) topBody.append(emptyRow(5, "No runs in this period."));
  const seen = new Map();
  for (const run of costly.runs) seen.set(run.trace_id, [run, `cost over ${factor}× p99`]);
  for (const run of long.runs) {
    const reason = `${number(run.total.calls)} calls (over ${number(calls - 1)})`;
    seen.set(run.trace_id, seen.has(run.trace_id) ? [run, `${seen.get(run.trace_id)[1]}; ${reason}`] : [run, reason]);
  }
  const anomalies = $("anomalies").querySelector("tbody");
  anomalies.replaceChildren(
    ...[...seen.values()].map(([run, reason]) => {
      const row = runRow(run, false);
      row.append(el("td", reason));
      return row;
    }),
  );
  if (!seen.size) anomalies.append(emptyRow(6, "No anomalous runs."));
}

function showFeature(feature) {
  units.feature = feature;
  const group = units.groups.find((g) => g.key === feature);
  $("units-percentiles").textContent = group ? `${number(group.runs)} runs: ${percentilesText(group.cost_per_run)}` : "No runs in this period.";
  drawHistogram(group);
  if (!group) return Promise.resolve();
  return Promise.all([loadWeeks(feature), loadRuns(group)]);
}

function loadUnits() {
  return loading(async () => {
    const answer = await api(`/v1/workspace/unit-costs?${range()}&by=feature`);
    units.groups = answer.groups.filter((g) => g.runs > 0);
    const select = $("units-feature");
    select.replaceChildren(...units.groups.map((g) => el("option", g.key === null ? "(none)" : g.key)));
    units.groups.forEach((g, i) => (select.options[i].value = g.key === null ? "" : g.key));
    $("units-empty").hidden = units.groups.length > 0;
    const keep = units.groups.some((g) => g.key === units.feature) ? units.feature : units.groups.length ? units.groups[0].key : null;
    if (keep !== null) select.value = keep;
    await showFeature(keep);
  });
}

$("units-feature").addEventListener("change", () => showFeature($("units-feature").value).catch(failed));
$("anomaly-form").addEventListener("submit", (event) => {
  event.preventDefault();
  showFeature(units.feature).catch(failed);
});
