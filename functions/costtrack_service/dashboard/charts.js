// costtrack dashboard: the charts. Loaded after uPlot and app.js, whose helpers it uses ($, el,
// usd, number). Cost per day is a uPlot bar chart stacked by feature or by model; the top
// features, models and customers are horizontal bars drawn with plain elements, each with its
// amount written beside it.
"use strict";

const PALETTE = ["#2f6fde", "#e8833a", "#3aa67a", "#b455c9", "#d64a5b", "#8a9a2b", "#4bb3c7", "#8b8f97"];
const STACKED = 7;  // groups drawn apart; the rest are one "other" layer
const charts = { by: "feature", reports: null, days: [], plot: null };

// The layers of the stacked chart: the costliest groups, then "other", each a cost per day.
function layers(report, days) {
  const index = new Map(days.map((day, i) => [day, i]));
  const groups = report.groups.filter((group) => Number(group.cost) > 0 || group.events > 0);
  const shown = groups.slice(0, groups.length > STACKED + 1 ? STACKED : STACKED + 1);
  const result = shown.map((group) => ({ label: group.key, costs: days.map(() => 0) }));
  if (groups.length > shown.length) result.push({ label: `other (${groups.length - shown.length})`, costs: days.map(() => 0) });
  groups.forEach((group, g) => {
    const layer = result[Math.min(g, result.length - 1)];
    for (const day of group.days || []) {
      if (index.has(day.day)) layer.costs[index.get(day.day)] += Number(day.cost);
    }
  });
  return result;
}

function renderDaily(reports, days) {
  charts.reports = reports;
  charts.days = days;
  drawDaily();
}

function drawDaily() {
  const container = $("chart");
  if (charts.plot) charts.plot.destroy();
  charts.plot = null;
  container.replaceChildren();
  const report = charts.reports[charts.by];
  if (!report.groups.length) {
    container.append(el("p", "No events in this period.", "empty"));
    return;
  }
  const stack = layers(report, charts.days);
  // uPlot draws series in order: each is drawn as the running total up to it, top layer first,
  // so every layer shows as the band between its total and the next one's.
  const totals = stack.map((_, i) => charts.days.map((_, d) => stack.slice(i).reduce((sum, layer) => sum + layer.costs[d], 0)));
  const x = charts.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
  const bars = uPlot.paths.bars({ size: [0.7, 48], align: 0 });
  const series = stack.map((layer, i) => ({
    label: layer.label,
    fill: PALETTE[i % PALETTE.length],
    stroke: PALETTE[i % PALETTE.length],
    width: 0,
    paths: bars,
    points: { show: false },
    value: (_, __, ___, index) => (index === null ? "–" : usd(layer.costs[index])),
  }));
  const options = {
    width: Math.max(container.clientWidth, 200),
    height: container.clientWidth < 500 ? 200 : 260,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    series: [{ label: "Day", value: (_, ts) => (ts === null ? "–" : new Date(ts * 1000).toISOString().slice(0, 10)) }, ...series],
    scales: { x: { time: true, range: (_, min, max) => [min - 43200, max + 43200] }, y: { range: (_, __, max) => [0, max > 0 ? max * 1.08 : 1] } },
    axes: [
      { stroke: "#5b6470", grid: { show: false } },
      { stroke: "#5b6470", size: 72, values: (_, splits) => splits.map((value) => usd(value)), grid: { stroke: "#eceff3" } },
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
  };
  charts.plot = new uPlot(options, [x, ...totals], container);
  container.setAttribute("aria-label", `Cost per day by ${charts.by}: ${stack.map((layer) => layer.label).join(", ")}`);
}

document.querySelectorAll("#chart-by button").forEach((button) => {
  button.addEventListener("click", () => {
    charts.by = button.dataset.by;
    document.querySelectorAll("#chart-by button").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
    if (charts.reports) drawDaily();
  });
});

// The chart follows its card's width (the page works down to 375 px).
new ResizeObserver(() => {
  if (charts.plot && Math.abs(charts.plot.width - $("chart").clientWidth) > 4) drawDaily();
}).observe($("chart"));

// Horizontal bars: each group's name (and a second, muted label), its bar, its amount.
function renderTop(id, groups, label) {
  const list = $(id);
  list.replaceChildren();
  const top = groups.slice(0, 8);
  const max = Math.max(...top.map((group) => Number(group.cost)), 0);
  for (const group of top) {
    const [name, detail] = label(group);
    const item = el("li");
    item.dataset.key = group.key;
    const names = el("span", null, "bar-label");
    names.append(el("span", name, "bar-name"));
    if (detail) names.append(el("span", detail, "bar-detail"));
    const track = el("span", null, "bar-track");
    const fill = el("span", null, "bar-fill");
    fill.style.width = `${max > 0 ? Math.max(1, (100 * Number(group.cost)) / max) : 0}%`;
    track.append(fill);
    const amount = el("span", usd(group.cost), "bar-amount");
    amount.title = `${number(group.events)} events`;
    item.title = `${name}: ${usd(group.cost)}, ${number(group.events)} events`;
    item.append(names, amount, track);
    list.append(item);
  }
  if (!top.length) list.append(el("li", "No events", "empty"));
}
