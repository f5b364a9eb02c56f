// costtrack dashboard: the runs view's unit costs and run lists. Loaded after uPlot, app.js,
// charts.js and lists.js, whose helpers it uses. Per feature: the distribution of cost per run
// (the sketch's buckets from /v1/workspace/unit-costs, drawn as bars) with p50/p90/p99, their
// trend by week (a chart and a table), and the anomalous runs: above the feature's p99 by a
// factor, or of more than a number of calls (/v1/workspace/runs?min_cost=&min_calls=); and the
// period's most expensive runs, paged, each a link to its calls.
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
      // A log axis: a label at each power of ten only (its minor ticks would crowd it).
      { stroke: "#5b6470", values: (_, splits) => splits.map((v) => (Number.isInteger(Math.round(Math.log10(v) * 1e6) / 1e6) ? usd(v) : "")), grid: { show: false } },
      { stroke: "#5b6470", grid: { stroke: "#eceff3" } },
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
  };
  units.plot = new uPlot(options, [x, runs], container);
  container.setAttribute("aria-label", `Cost per run of ${group.key}: ${group.runs} runs, ${percentilesText(group.cost_per_run)}`);
}

// Cost per run's p50, p90 and p99 in each of the weeks up to the period's last day, oldest
// first, of one group (`by`: feature or customer).
async function weeklyPercentiles(by, key, weeks = units.weeks) {
  const spans = [];
  for (let w = weeks - 1; w >= 0; w -= 1) {
    const to = daysBefore(state.to, 7 * w);
    spans.push([daysBefore(to, 6), to]);
  }
  const answers = await Promise.all(spans.map(([from, to]) => api(`/v1/workspace/unit-costs?by=${by}&${range(from, to)}`)));
  return answers.map((answer, i) => {
    const group = answer.groups.find((g) => g.key === key);
    return { from: spans[i][0], to: spans[i][1], runs: group ? group.runs : 0, figures: group ? group.cost_per_run : {} };
  });
}

// The weeks as lines (a point per week, at its last day) and a sentence.
function drawWeeks(id, summaryId, name, weeks) {
  const days = weeks.map((week) => week.to);
  const value = (field) => weeks.map((week) => (week.figures[field] === null || week.figures[field] === undefined ? null : Number(week.figures[field])));
  lineChart(id, days, [
    { label: "p50", values: value("p50") },
    { label: "p90", values: value("p90") },
    { label: "p99", values: value("p99") },
  ]);
  const latest = [...weeks].reverse().find((week) => week.runs > 0);
  const summary = latest
    ? `Cost per run of ${name}, by week: the latest week with runs (to ${latest.to}) has p50 ${usd(latest.figures.p50)}, ` +
      `p90 ${usd(latest.figures.p90)}, p99 ${usd(latest.figures.p99)} over ${number(latest.runs)} runs.`
    : `No runs of ${name} in these ${weeks.length} weeks.`;
  $(id).setAttribute("aria-label", summary);
  if (summaryId) $(summaryId).textContent = summary;
}

async function loadWeeks(feature) {
  const weeks = await weeklyPercentiles("feature", feature);
  drawWeeks("units-weeks-chart", null, feature, weeks);
  const body = $("units-weeks").querySelector("tbody");
  const cell = (value) => el("td", value === null || value === undefined ? "–" : usd(value), "num");
  body.replaceChildren(...[...weeks].reverse().map((week) =>
    tableRow(el("td", `${week.from} to ${week.to}`), el("td", number(week.runs), "num"),
      cell(week.figures.p50), cell(week.figures.p90), cell(week.figures.p99))));
}

// Runs above p99 × factor of their feature, or of many calls; the reasons by run.
async function anomalousRuns(group, factor, calls, extra = "") {
  const feature = group ? `&feature=${encodeURIComponent(group.key)}` : "";
  const threshold = group && group.cost_per_run.p99 !== null ? (Number(group.cost_per_run.p99) * factor).toFixed(12) : null;
  const [costly, long] = await Promise.all([
    threshold === null ? { runs: [] } : api(`/v1/workspace/runs?${range()}${feature}${extra}&min_cost=${threshold}&limit=50`),
    api(`/v1/workspace/runs?${range()}${feature}${extra}&min_calls=${calls}&limit=50`),
  ]);
  const seen = new Map();
  for (const run of costly.runs) seen.set(run.trace_id, [run, `cost over ${factor}× p99 (${usd(group.cost_per_run.p99)})`]);
  for (const run of long.runs) {
    const reason = `${number(run.total.calls)} calls (over ${number(calls - 1)})`;
    seen.set(run.trace_id, seen.has(run.trace_id) ? [run, `${seen.get(run.trace_id)[1]}; ${reason}`] : [run, reason]);
  }
  return [...seen.values()];
}

async function loadRuns(group) {
  const factor = Number($("anomaly-factor").value) || 2;
  const calls = Math.max(1, Math.floor(Number($("anomaly-calls").value) || 100));
  const found = await anomalousRuns(group, factor, calls);
  const anomalies = $("anomalies").querySelector("tbody");
  anomalies.replaceChildren(...found.map(([run, reason]) => runRow(run, [el("td", reason)])));
  if (!found.length) anomalies.append(emptyRow(6, "No anomalous runs."));
}

function showFeature(feature) {
  units.feature = feature;
  const group = units.groups.find((g) => g.key === feature);
  $("units-percentiles").textContent = group ? `${number(group.runs)} runs: ${percentilesText(group.cost_per_run)}` : "No runs in this period.";
  drawHistogram(group);
  if (!group) return Promise.resolve();
  return Promise.all([loadWeeks(feature), loadRuns(group)]);
}

// The runs view: the unit costs of a feature (the address's, else the costliest) and the
// most expensive runs of the period, paged.
async function loadRunsView(query) {
  units.feature = query.get("feature") || units.feature;
  await Promise.all([loadUnits(), loadTopRuns(query.get("feature"), true)]);
}

const runList = { pager: null, shown: 0, feature: null };

async function loadTopRuns(feature, reset) {
  if (reset) {
    runList.feature = feature;
    runList.shown = 0;
    runList.pager = new Pager((cursor) => {
      const params = new URLSearchParams({ from: state.from, to: state.to, sort: "cost", limit: "25" });
      if (feature) params.set("feature", feature);
      if (cursor) params.set("cursor", cursor);
      return api(`/v1/workspace/runs?${params}`);
    }, "cursor");
    $("top-runs").querySelector("tbody").replaceChildren();
  }
  const page = await runList.pager.next();
  const body = $("top-runs").querySelector("tbody");
  if (page) {
    body.append(...page.runs.map((run) => runRow(run)));
    runList.shown += page.runs.length;
  }
  if (!runList.shown) body.replaceChildren(emptyRow(5, "No runs in this period."));
  showListEnd("more-runs", "runs-end", runList.pager, runList.shown);
}

$("more-runs").addEventListener("click", () => loading(() => loadTopRuns(runList.feature, false)).catch(failed));

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
