// costtrack dashboard: "Reconcile with the provider's bill". Loaded after uPlot, app.js and
// charts.js, whose helpers it uses ($, el, api, usd, number, state, tableRow, emptyRow, PALETTE,
// lineChart). It reads GET /v1/workspace/reconciliation over the page's date
// range: billed vs tracked USD per day (a uPlot chart; a day whose bill is not imported has no
// point), the gap by class, the worst models, and the models whose provider-reported cost differs
// most from costtrack's price. Shown data goes through textContent only.
"use strict";

const GAP_CLASSES = [
  ["untracked_usd", "Untracked usage", "calls costtrack never saw"],
  ["price_drift_usd", "Price drift", "the catalogue's price differs from the bill's"],
  ["timing_usd", "Timing", "counted on the provider's other day"],
  ["unbilled_usd", "Unbilled", "tracked but not on the bill"],
];
const recon = { answer: null, range: null, days: [], plot: null };

// The API compares days up to yesterday (today's bill is not in): the page's range, clipped.
function reconciliationRange() {
  const yesterday = new Date(Date.now() - DAY_MS).toISOString().slice(0, 10);
  const to = state.to < yesterday ? state.to : yesterday;
  const from = state.from < to ? state.from : to;
  return { from, to };
}

function reconciliationDays(from, to) {
  const days = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}

// Asked through the page's last day: the bill's days end yesterday (today's bill is not in, so
// today has no finding and no point), but the costs providers reported today are listed too.
async function loadReconciliation() {
  const { from, to } = reconciliationRange();
  const last = state.to > to ? state.to : to;
  const answer = await api(`/v1/workspace/reconciliation?from=${from}&to=${last}`);
  recon.answer = answer;
  recon.range = { from, to };
  recon.days = reconciliationDays(from, to);
  renderReconciliation(answer);
}

function renderReconciliation(answer) {
  const connected = answer.connections.map((connection) => connection.provider);
  renderReported(answer.reported || []);
  $("recon-none").hidden = connected.length > 0;
  $("recon-body").hidden = connected.length === 0;
  if (!connected.length) return;
  const { totals } = answer;
  $("recon-summary").textContent =
    `${recon.range.from} to ${recon.range.to} (UTC): billed ${usd(totals.billed_usd)}, tracked ${usd(totals.tracked_usd)}` +
    ` · ${answer.days_imported.length} days imported from ${connected.join(", ")}`;
  renderGapClasses(totals);
  renderWorstModels(totals.worst_models);
  renderFindings(answer.findings);
  drawReconciliation();
}

function renderGapClasses(totals) {
  const list = $("recon-classes");
  list.replaceChildren();
  const max = Math.max(...GAP_CLASSES.map(([field]) => Math.abs(Number(totals[field]))), 0);
  GAP_CLASSES.forEach(([field, name, detail], i) => {
    const item = el("li");
    item.dataset.key = field.replace(/_usd$/, "");
    const names = el("span", null, "bar-label");
    names.append(el("span", name, "bar-name"), el("span", detail, "bar-detail"));
    const track = el("span", null, "bar-track");
    const fill = el("span", null, "bar-fill");
    const size = Math.abs(Number(totals[field]));
    fill.style.width = `${max > 0 && size > 0 ? Math.max(1, (100 * size) / max) : 0}%`;
    fill.style.background = PALETTE[(i + 1) % PALETTE.length];
    track.append(fill);
    item.append(names, el("span", usd(totals[field]), "bar-amount"), track);
    list.append(item);
  });
}

function renderWorstModels(models) {
  const list = $("recon-worst");
  list.replaceChildren();
  const max = Math.max(...models.map((model) => Number(model.gap_usd)), 0);
  for (const model of models) {
    const item = el("li");
    item.dataset.key = `${model.provider}/${model.model}`;
    const names = el("span", null, "bar-label");
    names.append(link(model.model, ["models", model.provider, model.model], {}, "bar-name"), el("span", model.provider, "bar-detail"));
    const track = el("span", null, "bar-track");
    const fill = el("span", null, "bar-fill");
    fill.style.width = `${max > 0 ? Math.max(1, (100 * Number(model.gap_usd)) / max) : 0}%`;
    track.append(fill);
    item.append(names, el("span", usd(model.gap_usd), "bar-amount"), track);
    list.append(item);
  }
  if (!models.length) list.append(el("li", "Every model agrees with the bill", "empty"));
}

// Reported vs priced cost by model (no bill needed): the 5 largest differences, either way.
function renderReported(models) {
  $("recon-reported").hidden = models.length === 0;
  const list = $("recon-reported-models");
  list.replaceChildren();
  const shown = models.slice(0, 5);
  const max = Math.max(...shown.map((model) => Math.abs(Number(model.difference_usd))), 0);
  for (const model of shown) {
    const item = el("li");
    item.dataset.key = `${model.provider}/${model.model}`;
    const names = el("span", null, "bar-label");
    const detail = `${model.provider} · reported ${usd(model.reported_usd)}, priced ${usd(model.priced_usd)}, ${number(model.events)} events`;
    names.append(el("span", model.model, "bar-name"), el("span", detail, "bar-detail"));
    const track = el("span", null, "bar-track");
    const fill = el("span", null, "bar-fill");
    const size = Math.abs(Number(model.difference_usd));
    fill.style.width = `${max > 0 && size > 0 ? Math.max(1, (100 * size) / max) : 0}%`;
    track.append(fill);
    const sign = Number(model.difference_usd) > 0 ? "+" : "";
    item.append(names, el("span", `${sign}${usd(model.difference_usd)}`, "bar-amount"), track);
    list.append(item);
  }
}

const CLASS_NAMES = { untracked: "untracked", price_drift: "price drift", timing: "timing", unbilled: "unbilled" };

function rates(values) {
  const entries = Object.entries(values || {});
  return entries.length ? entries.map(([name, value]) => `${name.replace(/_mtok$/, "")} $${value}`).join(", ") : "";
}

// The findings, largest gap first (at most 50; the API and `costtrack admin reconcile` have all).
function renderFindings(findings) {
  const body = $("recon-findings").tBodies[0];
  body.replaceChildren();
  const sorted = [...findings].sort((a, b) => Math.abs(Number(b.gap_usd)) - Math.abs(Number(a.gap_usd)));
  for (const finding of sorted.slice(0, 50)) {
    const detail = finding.classes.includes("price_drift")
      ? `per 1M: applied ${rates(finding.applied_rates)}; bill implies ${rates(finding.implied_rates)}`
      : "";
    const cells = [
      el("td", finding.day),
      el("td", `${finding.provider}/${finding.model}`),
      el("td", finding.classes.map((name) => CLASS_NAMES[name] || name).join(", ")),
      el("td", usd(finding.billed.usd), "num"),
      el("td", usd(finding.tracked.usd), "num"),
      el("td", usd(finding.gap_usd), "num"),
      el("td", detail),
    ];
    body.append(tableRow(...cells));
  }
  if (!findings.length) body.append(emptyRow(7, "No gaps: every imported day agrees with the bill."));
}

// Billed and tracked USD per day, two lines over the range; days not imported are gaps.
function drawReconciliation() {
  if (!recon.answer || $("recon-body").hidden) return;
  const imported = new Set(recon.answer.days_imported);
  const byDay = new Map(recon.answer.days.map((row) => [row.day, row]));
  const figure = (field) =>
    recon.days.map((day) => (imported.has(day) ? Number((byDay.get(day) || {})[field] || 0) : null));
  const billed = figure("billed_usd");
  const tracked = figure("tracked_usd");
  recon.plot = lineChart("recon-chart", recon.days, [
    { label: "Billed", values: billed, color: PALETTE[1] },
    { label: "Tracked", values: tracked, color: PALETTE[0] },
  ]);
  const summary = `Billed ${usd(recon.answer.totals.billed_usd)} vs tracked ${usd(recon.answer.totals.tracked_usd)} per day, ` +
    `${recon.range.from} to ${recon.range.to}`;
  $("recon-chart").setAttribute("aria-label", summary);
}
