// costtrack dashboard: the charts. Loaded after uPlot and app.js, whose helpers it uses ($, el,
// usd, number). Every chart is uPlot (vendored) and follows its card's width down to 375 px;
// each has a text summary beside it (an aria-label and a paragraph), since a canvas says
// nothing to a screen reader. Top features, models and customers are bars drawn with plain
// elements, each with its amount written beside it and a link to its view.
"use strict";

const PALETTE = ["#2f6fde", "#c2410c", "#15803d", "#9333ea", "#be123c", "#4d7c0f", "#0e7490", "#57534e"];
const STACKED = 7;  // groups drawn apart; the rest are one "other" layer
const AXIS = "#4b5563";
const GRID = "#eceff3";
const charts = { by: "feature", reports: null, days: [], plot: null };
const plots = new Map();  // container id -> { plot, draw } (redrawn when the card's width changes)

const dayOf = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);
const timestamps = (days) => days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);

// Draw (or redraw) a uPlot chart in a container; `make(width)` gives [options, data].
function plotInto(id, make) {
  const container = $(id);
  const entry = plots.get(id);
  if (entry && entry.plot) entry.plot.destroy();
  container.replaceChildren();
  const draw = () => {
    const again = plots.get(id);
    if (again && again.plot) again.plot.destroy();
    container.replaceChildren();
    const width = Math.max(container.clientWidth, 200);
    const [options, data] = make(width);
    const plot = new uPlot({ width, height: width < 500 ? 200 : 250, ...options }, data, container);
    plots.set(id, { plot, draw, width });
    return plot;
  };
  return draw();
}

function clearPlot(id, text) {
  const entry = plots.get(id);
  if (entry && entry.plot) entry.plot.destroy();
  plots.delete(id);
  $(id).replaceChildren(el("p", text, "empty"));
}

// The charts follow their cards' width (the page works down to 375 px).
const resizes = new ResizeObserver(() => {
  for (const [id, entry] of plots) {
    if (entry.plot && Math.abs(entry.width - $(id).clientWidth) > 4 && $(id).clientWidth > 0) entry.draw();
  }
});
document.querySelectorAll(".chart").forEach((chart) => resizes.observe(chart));

const dayAxis = { stroke: AXIS, grid: { show: false } };
const moneyAxis = { stroke: AXIS, size: 72, values: (_, splits) => splits.map((value) => usd(value)), grid: { stroke: GRID } };
const daySeries = { label: "Day", value: (_, ts) => (ts === null ? "–" : dayOf(ts)) };
const dayScale = { time: true, range: (_, min, max) => [min - 43200, max + 43200] };
const zeroScale = { range: (_, __, max) => [0, max > 0 ? max * 1.08 : 1] };

// A chart over UTC days, in USD, from zero; `extra`: its cursor and hooks.
function dayOptions(series, extra) {
  return {
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    series: [daySeries, ...series],
    scales: { x: dayScale, y: zeroScale },
    axes: [dayAxis, moneyAxis],
    legend: { live: true },
    ...extra,
  };
}

// Cost per day as stacked bars: `layers` [{label, costs per day}]; `onDay(day)` on a click.
function stackedBars(id, days, layers, onDay) {
  // uPlot draws series in order: each is drawn as the running total up to it, top layer first,
  // so every layer shows as the band between its total and the next one's.
  const totals = layers.map((_, i) => days.map((_, d) => layers.slice(i).reduce((sum, layer) => sum + layer.costs[d], 0)));
  return plotInto(id, () => {
    const bars = uPlot.paths.bars({ size: [0.7, 48], align: 0 });
    const series = layers.map((layer, i) => ({
      label: layer.label,
      fill: PALETTE[i % PALETTE.length],
      stroke: PALETTE[i % PALETTE.length],
      width: 0,
      paths: bars,
      points: { show: false },
      value: (_, __, ___, index) => (index === null ? "–" : usd(layer.costs[index])),
    }));
    const clicks = (u) => {
      u.over.classList.add("clickable");
      u.over.addEventListener("click", () => {
        if (u.cursor.idx !== null && u.cursor.idx !== undefined) onDay(days[u.cursor.idx]);
      });
    };
    const options = dayOptions(series, {
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      hooks: onDay ? { ready: [clicks] } : {},
    });
    return [options, [timestamps(days), ...totals]];
  });
}

// Lines over days (or weeks): `lines` [{label, values (null: no point)}].
function lineChart(id, days, lines, format = usd) {
  return plotInto(id, () => {
    const series = lines.map((line, i) => ({
      label: line.label,
      stroke: line.color || PALETTE[i % PALETTE.length],
      width: 2,
      dash: line.dash,
      spanGaps: false,
      points: { show: line.points !== false, size: 5, fill: line.color || PALETTE[i % PALETTE.length] },
      value: (_, __, ___, index) => (index === null || line.values[index] === null ? "–" : format(line.values[index])),
    }));
    const options = dayOptions(series, { cursor: { drag: { x: false, y: false } } });
    return [options, [timestamps(days), ...lines.map((line) => line.values)]];
  });
}

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

// A day's cost per day of a series of days: [day, cost] with the highest and the median.
function dayFigures(days, costs) {
  const sorted = [...costs].sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
  let top = 0;
  costs.forEach((cost, i) => { if (cost > costs[top]) top = i; });
  return { median, topDay: days[top], topCost: costs[top] || 0 };
}

// Days far above the period's usual day: over twice the median (and a cent or more above it).
function spikes(days, costs) {
  const { median } = dayFigures(days, costs);
  return days
    .map((day, i) => ({ day, cost: costs[i], factor: median > 0 ? costs[i] / median : 0 }))
    .filter((row) => median > 0 && row.factor >= 2 && row.cost - median >= 0.01)
    .sort((a, b) => b.cost - a.cost);
}

function drawDaily() {
  const report = charts.reports[charts.by];
  if (!report.groups.length) {
    clearPlot("chart", "No events in this period.");
    $("chart-summary").textContent = "No events in this period.";
    $("chart-days").replaceChildren();
    return;
  }
  const stack = layers(report, charts.days);
  charts.plot = stackedBars("chart", charts.days, stack, (day) => { location.hash = viewLink(["events"], { day }); });
  const costs = charts.days.map((_, d) => stack.reduce((sum, layer) => sum + layer.costs[d], 0));
  const { median, topDay, topCost } = dayFigures(charts.days, costs);
  const summary = `Cost per day by ${charts.by}, ${charts.days[0]} to ${charts.days[charts.days.length - 1]}: ` +
    `highest ${topDay} (${usd(topCost)}), median day ${usd(median)}; ${stack.map((layer) => layer.label).join(", ")}.` +
    " Choose a day (a bar, or the list below) to see its events.";
  $("chart").setAttribute("aria-label", summary);
  $("chart-summary").textContent = summary;
  $("chart-days").replaceChildren(...charts.days.map((day, d) => {
    const item = el("li");
    item.append(link(day, ["events"], { day }), " ", el("span", usd(costs[d]), "num"));
    return item;
  }));
}

function renderDaily(reports, days) {
  charts.reports = reports;
  charts.days = days;
  drawDaily();
}

document.querySelectorAll("#chart-by button").forEach((button) => {
  button.addEventListener("click", () => {
    charts.by = button.dataset.by;
    document.querySelectorAll("#chart-by button").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
    if (charts.reports) drawDaily();
  });
});

// Horizontal bars: each group's name (a link to its view when `href` gives one, and a second,
// muted label), its bar, its amount.
function renderTop(id, groups, label, href, limit = 8) {
  const list = $(id);
  list.replaceChildren();
  const top = groups.slice(0, limit);
  const max = Math.max(...top.map((group) => Math.abs(Number(group.cost))), 0);
  for (const group of top) {
    const [name, detail] = label(group);
    const item = el("li");
    item.dataset.key = group.key;
    const names = el("span", null, "bar-label");
    const target = href ? href(group) : null;
    if (target) {
      const anchor = el("a", name, "bar-name");
      anchor.href = target;
      names.append(anchor);
    } else {
      names.append(el("span", name, "bar-name"));
    }
    if (detail) names.append(el("span", detail, "bar-detail"));
    const track = el("span", null, "bar-track");
    const fill = el("span", null, "bar-fill");
    fill.style.width = `${max > 0 ? Math.max(1, (100 * Math.abs(Number(group.cost))) / max) : 0}%`;
    track.append(fill);
    const amount = el("span", usd(group.cost), "bar-amount");
    if (group.events !== undefined) {
      amount.title = `${number(group.events)} events`;
      item.title = `${name}: ${usd(group.cost)}, ${number(group.events)} events`;
    }
    item.append(names, amount, track);
    list.append(item);
  }
  if (!top.length) list.append(el("li", "No events", "empty"));
}
