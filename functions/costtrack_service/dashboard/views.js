// costtrack dashboard: the overview, the customers list, and a customer's, feature's or model's
// own view. Loaded after app.js, charts.js, lists.js, budgets.js and units.js, whose helpers it
// uses. Everything comes from the owners' API as it is: the usage report per grouping (with each
// group's days), the events list (what a customer spent on which model: the events of the
// period, grouped here), the runs list and the unit costs.
"use strict";

const modelSegments = (key) => ["models", ...key.split(/\/(.*)/s).slice(0, 2)];
const HREF = {
  feature: (group) => viewLink(["features", group.key]),
  model: (group) => viewLink(modelSegments(group.key)),
  customer: (group) => (group.key === "(none)" ? null : viewLink(["customers", group.key])),
};

// "+23 % against the previous 30 days ($4.10)".
function changeText(cost, before, span) {
  const now = Number(cost);
  const then = Number(before);
  const days = `the previous ${span} day${span === 1 ? "" : "s"}`;
  if (then === 0) return now === 0 ? `No cost, as in ${days}.` : `New: nothing in ${days}.`;
  const percent = ((now - then) / then) * 100;
  const sign = percent > 0 ? "+" : "";
  return `${sign}${percent.toFixed(Math.abs(percent) < 10 ? 1 : 0)} % against ${days} (${usd(before)}).`;
}

function totalCosts(report, days) {
  const index = new Map(days.map((day, i) => [day, i]));
  const costs = days.map(() => 0);
  for (const group of report.groups) {
    for (const day of group.days || []) if (index.has(day.day)) costs[index.get(day.day)] += Number(day.cost);
  }
  return costs;
}

// -- #/overview -------------------------------------------------------------------------------

async function loadOverview() {
  const previous = previousRange();
  const [byFeature, byModel, byCustomer, before, unknown, budgets, anomalySettings, unitCosts] = await Promise.all([
    api(`/v1/workspace/usage?${range()}&group_by=feature&daily=true`),
    api(`/v1/workspace/usage?${range()}&group_by=model&daily=true`),
    api(`/v1/workspace/usage?${range()}&group_by=customer`),
    api(`/v1/workspace/usage?${range(previous.from, previous.to)}&group_by=day`),
    api(`/v1/workspace/unknown-models?${range()}`),
    api("/v1/workspace/budgets"),
    api("/v1/workspace/run-anomalies"),
    api(`/v1/workspace/unit-costs?${range()}&by=feature`),
  ]);
  $("total-cost").textContent = usd(byFeature.totals.cost);
  $("cost-change").textContent = changeText(byFeature.totals.cost, before.totals.cost, previous.span);
  $("total-events").textContent = number(byFeature.totals.events);
  $("total-tokens").textContent = number(byFeature.totals.tokens);
  $("range-text").textContent = `${byFeature.from} to ${byFeature.to} (UTC)`;
  renderHidden(byFeature);
  const days = rangeDays();
  renderDaily({ feature: byFeature, model: byModel }, days);
  renderTop("top-customer", byCustomer.groups, customerLabel, HREF.customer, 5);
  renderTop("top-feature", byFeature.groups, (group) => [group.key], HREF.feature, 5);
  renderTop("top-model", byModel.groups, (group) => [group.key], HREF.model, 5);
  renderUnknown(unknown.models);
  renderNearBudgets(budgets.budgets);
  const factor = Number(anomalySettings.factor) || 2;
  const found = [];
  const groups = unitCosts.groups.filter((group) => group.runs > 0 && group.key !== null);
  const perFeature = await Promise.all(groups.map((group) => anomalousRuns(group, factor, anomalySettings.calls)));
  for (const rows of perFeature) found.push(...rows);
  found.sort((a, b) => Number(b[0].total.cost) - Number(a[0].total.cost));
  renderOverviewAnomalies(found.slice(0, 5));
  renderAttention(days, totalCosts(byFeature, days), budgets.budgets, found.length, unknown.models);
}

// Budgets by share spent, the nearest their limit first (those past half of it).
function renderNearBudgets(budgets) {
  const near = [...budgets].sort((a, b) => Number(b.percent) - Number(a.percent)).filter((b) => Number(b.percent) >= 50);
  const list = $("near-budgets");
  list.replaceChildren();
  for (const budget of near.slice(0, 4)) {
    const item = el("li", null, "budget-near");
    const names = el("span", null, "bar-label");
    names.append(link(budgetName(budget), ["budgets"]));
    item.append(names, el("span", `${budget.percent}%`, budget.exceeded ? "bar-amount bad" : "bar-amount"), budgetMeter(budget));
    list.append(item);
  }
  if (!near.length) list.append(el("li", budgets.length ? "Every budget is under half spent." : "No budgets yet.", "empty"));
}

function renderOverviewAnomalies(found) {
  const list = $("overview-anomalies");
  list.replaceChildren(...found.map(([run, reason]) => {
    const item = el("li");
    item.append(runLink(run.trace_id), ` ${usd(run.total.cost)}, ${number(run.total.calls)} calls (${run.feature}): `, el("span", reason, "muted"));
    return item;
  }));
  if (!found.length) list.append(el("li", "No anomalous runs in this period.", "empty"));
}

// What to look at first: days the cost jumped, budgets past a threshold, anomalies, unpriced.
function renderAttention(days, costs, budgets, anomalies, unknown) {
  const list = $("attention");
  list.replaceChildren();
  const { median } = dayFigures(days, costs);
  for (const spike of spikes(days, costs).slice(0, 3)) {
    const item = el("li");
    item.append("Cost jumped on ", link(spike.day, ["events"], { day: spike.day }),
      `: ${usd(spike.cost)}, ${spike.factor.toFixed(1)}× the median day (${usd(median)}).`);
    list.append(item);
  }
  for (const budget of budgets.filter((b) => b.crossed.length)) {
    const item = el("li");
    item.append(link(budgetName(budget), ["budgets"]), ` has passed ${budget.crossed[budget.crossed.length - 1]}% (${budget.percent}% spent).`);
    list.append(item);
  }
  if (anomalies) {
    const item = el("li");
    item.append(link(`${number(anomalies)} anomalous run${anomalies === 1 ? "" : "s"}`, ["runs"]), " in this period.");
    list.append(item);
  }
  if (unknown.length) list.append(el("li", `${number(unknown.length)} unpriced model${unknown.length === 1 ? "" : "s"} (below).`));
  if (!list.children.length) list.append(el("li", "Nothing stands out in this period.", "empty"));
}

// -- #/customers ------------------------------------------------------------------------------

async function loadCustomers() {
  const report = await api(`/v1/workspace/usage?${range()}&group_by=customer`);
  const total = Number(report.totals.cost);
  const body = $("customer-list").tBodies[0];
  body.replaceChildren(...report.groups.map((group) => {
    const [name] = customerLabel(group);
    const first = el("td");
    const target = HREF.customer(group);
    if (target) {
      const anchor = el("a", name);
      anchor.href = target;
      first.append(anchor);
    } else {
      first.append(name);
    }
    const share = total > 0 ? `${((100 * Number(group.cost)) / total).toFixed(1)} %` : "–";
    return tableRow(first, el("td", group.key === "(none)" ? "" : group.key), el("td", number(group.events), "num"),
      el("td", share, "num"), el("td", usd(group.cost), "num"));
  }));
  if (!report.groups.length) body.append(emptyRow(5, "No events in this period."));
}

// -- #/customers/{id}, #/features/{name}, #/models/{provider}/{model} ---------------------------

// Per kind: the usage grouping, the events filter, the split and the "also" of its events, and
// how its runs are listed.
const SUBJECTS = {
  customer: {
    noun: "Customer", group: "customer", key: ([id]) => id,
    filters: ([id]) => ({ customer_id: id }), runs: ([id]) => `&customer=${encodeURIComponent(id)}`,
    split: ["Models", "model", (e) => `${e.provider}/${e.model}`], also: ["Features", "feature", (e) => e.feature],
    units: "customer",
  },
  feature: {
    noun: "Feature", group: "feature", key: ([name]) => name,
    filters: ([name]) => ({ feature: name }), runs: ([name]) => `&feature=${encodeURIComponent(name)}`,
    split: ["Models", "model", (e) => `${e.provider}/${e.model}`], also: ["Customers", "customer", (e) => e.customer_id || "(none)"],
    units: "feature",
  },
  model: {
    noun: "Model", group: "model", key: (ids) => ids.join("/"),
    filters: ([provider, model]) => ({ provider, model }), runs: () => "",
    split: ["Features", "feature", (e) => e.feature], also: ["Customers", "customer", (e) => e.customer_id || "(none)"],
    units: null,
  },
};

function customerName(events, id) {
  const named = events.find((event) => event.customer_id === id && event.customer_name);
  return named ? named.customer_name : null;
}

async function loadSubject(kind, ids, query, generation) {
  const subject = SUBJECTS[kind];
  const key = subject.key(ids);
  const previous = previousRange();
  $("subject-kind").textContent = subject.noun;
  const up = kind === "customer" ? ["customers", "Customers"] : ["overview", "Overview"];
  $("subject-up").textContent = up[1];
  $("subject-up").href = viewLink([up[0]]);
  $("subject-title").textContent = key;
  $("subject-detail").textContent = "";
  const filters = subject.filters(ids);
  const feature = query.get("feature");
  if (feature && kind !== "feature") filters.feature = feature;
  const [report, before, listed, runs] = await Promise.all([
    api(`/v1/workspace/usage?${range()}&group_by=${subject.group}&daily=true`),
    api(`/v1/workspace/usage?${range(previous.from, previous.to)}&group_by=${subject.group}`),
    eventsInPeriod(filters, state.from, state.to),
    api(`/v1/workspace/runs?${range()}${subject.runs(ids)}${feature && kind !== "feature" ? `&feature=${encodeURIComponent(feature)}` : ""}&limit=${kind === "model" ? 100 : 10}`),
  ]);
  if (!current(generation)) return;
  const group = report.groups.find((g) => g.key === key) || { key, cost: "0", events: 0, days: [] };
  const earlier = before.groups.find((g) => g.key === key) || { cost: "0" };
  if (kind === "customer") {
    const name = group.customer_name || customerName(listed.events, key);
    $("subject-title").textContent = name || key;
    $("subject-detail").textContent = name ? `Customer id ${key}` : "";
  }
  document.title = `${$("subject-title").textContent} · costtrack`;
  const filtered = feature && kind !== "feature";
  $("subject-cost").textContent = usd(filtered ? listed.events.reduce((sum, e) => sum + Number(e.cost), 0) : group.cost);
  $("subject-change").textContent = filtered ? `Feature ${feature} only.` : changeText(group.cost, earlier.cost, previous.span);
  $("subject-events").textContent = `${number(filtered ? listed.events.length : group.events)} events, ${state.from} to ${state.to} (UTC)`;

  // Its cost per day, from the usage report's days.
  const days = rangeDays();
  const costs = totalCosts({ groups: [group] }, days);
  if (filtered) {
    costs.fill(0);
    const index = new Map(days.map((day, i) => [day, i]));
    for (const event of listed.events) {
      const i = index.get(event.received_at.slice(0, 10));
      if (i !== undefined) costs[i] += Number(event.cost);
    }
  }
  stackedBars("subject-chart", days, [{ label: key, costs }], (day) => { location.hash = viewLink(["events"], { ...eventFilterOf(kind, ids), day }); });
  const { median, topDay, topCost } = dayFigures(days, costs);
  const summary = `Cost per day of ${$("subject-title").textContent}: highest ${topDay} (${usd(topCost)}), median day ${usd(median)}.`;
  $("subject-chart").setAttribute("aria-label", summary);
  $("subject-chart-summary").textContent = summary;

  // What it was spent on (and for whom), from the period's events.
  const note = listed.complete
    ? `From its ${number(listed.events.length)} listed events of the period.`
    : `From its latest ${number(listed.events.length)} events of the period (the list goes on).`;
  const [splitTitle, splitKind, splitKey] = subject.split;
  const [alsoTitle, alsoKind, alsoKey] = subject.also;
  $("subject-split-title").textContent = splitTitle;
  $("subject-other-title").textContent = alsoTitle;
  const label = (which) => (g) => (which === "customer" ? customerLabel({ key: g.key, customer_name: g.label.customer_name }) : [g.key]);
  renderTop("subject-split", groupEvents(listed.events, splitKey), label(splitKind), HREF[splitKind]);
  renderTop("subject-other", groupEvents(listed.events, alsoKey), label(alsoKind), HREF[alsoKind]);
  $("subject-split-note").textContent = note;

  // Its runs (a model's: the runs that used it), its latest events.
  const shownRuns = kind === "model" ? runs.runs.filter((run) => run.total.models.includes(key)).slice(0, 10) : runs.runs;
  const body = $("subject-runs").tBodies[0];
  body.replaceChildren(...shownRuns.map((run) => {
    const row = runRow(run);
    row.insertBefore(el("td", run.total.first_at.replace("T", " ").slice(0, 19)), row.children[2]);
    return row;
  }));
  if (!shownRuns.length) body.append(emptyRow(6, "No runs in this period."));
  const eventsBody = $("subject-events-table").tBodies[0];
  eventsBody.replaceChildren(...listed.events.slice(0, 10).map((event) => {
    const row = eventRow(event);
    row.children[4].remove();  // the environment column (not in this table)
    return row;
  }));
  if (!listed.events.length) eventsBody.append(emptyRow(7, "No events in this period."));
  $("subject-all-events").href = viewLink(["events"], eventFilterOf(kind, ids));

  // Its cost per run by week.
  $("subject-units-card").hidden = !subject.units;
  if (subject.units) {
    const weeks = await weeklyPercentiles(subject.units, key);
    if (current(generation)) drawWeeks("subject-units-chart", "subject-units-summary", key, weeks);
  }
}

// The events view's filter of a subject (its own, in the address).
function eventFilterOf(kind, ids) {
  if (kind === "customer") return { customer_id: ids[0] };
  if (kind === "feature") return { feature: ids[0] };
  return { model: ids.join("/") };
}
