// costtrack dashboard: the budgets view: the "Budgets and alerts" panel and a budget's burn-down. Loaded after app.js, whose helpers it
// uses ($, el, api, usd, status, failed); shown data goes through textContent only.
"use strict";

const PERIOD_NAMES = { month: "calendar month", rolling_7d: "rolling 7 days", rolling_30d: "rolling 30 days" };
const budgetNames = new Map();  // budget_id -> what the panel calls it (deliveries name budgets)
const deliveryList = { pager: null, shown: 0 };  // the deliveries' pages, newest first

async function loadBudgets() {
  const pager = new Pager((cursor) => {
    const params = new URLSearchParams({ limit: "25" });
    if (cursor) params.set("cursor", cursor);
    return api(`/v1/workspace/webhook-deliveries?${params}`);
  }, "next_cursor");
  const [budgets, webhooks, deliveries] = await Promise.all([
    api("/v1/workspace/budgets"),
    api("/v1/workspace/webhooks"),
    pager.next(),
  ]);
  budgetNames.clear();
  for (const budget of budgets.budgets) budgetNames.set(budget.budget_id, budgetName(budget));
  renderBudgets(budgets.budgets);
  renderWebhooks(webhooks.webhooks);
  deliveryList.pager = pager;
  deliveryList.shown = 0;
  emptiedBody("deliveries");
  renderDeliveries(deliveries.deliveries);
  return budgets.budgets;
}

async function loadMoreDeliveries() {
  const pager = deliveryList.pager;
  const page = await pager.next();
  if (page && pager === deliveryList.pager) renderDeliveries(page.deliveries);
}

$("more-deliveries").addEventListener("click", () => loading(loadMoreDeliveries).catch(failed));

// The panel's tables are redrawn whole on each load.
function emptiedBody(tableId) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  return body;
}

function deleteButton(onClick) {
  const button = el("button", "Delete", "danger");
  button.type = "button";
  button.addEventListener("click", onClick);
  return button;
}

function budgetName(budget) {
  if (budget.name) return budget.name;
  const covers = budget.scope === "workspace" ? "Workspace" : `${budget.scope} ${budget.scope_value}`;
  return `${covers}, ${usd(budget.amount)} per ${PERIOD_NAMES[budget.period] || budget.period}`;
}

// Spend against the budget, on a scale that reaches the highest threshold, each threshold
// marked where it lies (reached ones stand out).
function budgetMeter(budget) {
  const percent = Number(budget.percent);
  const scale = Math.max(100, ...budget.thresholds.map(Number), Math.min(percent, 200));
  const meter = el("div", null, "meter budget-meter");
  meter.setAttribute("role", "meter");
  meter.setAttribute("aria-valuemin", "0");
  meter.setAttribute("aria-valuemax", String(scale));
  meter.setAttribute("aria-valuenow", String(Math.min(percent, scale)));
  meter.setAttribute("aria-label", `${budgetName(budget)}: ${budget.percent}% spent`);
  const fill = el("div", null, budget.exceeded ? "meter-fill full" : "meter-fill");
  fill.style.width = `${(100 * Math.min(percent, scale)) / scale}%`;
  meter.append(fill);
  for (const threshold of budget.thresholds) {
    const mark = el("span", null, budget.crossed.includes(threshold) ? "mark reached" : "mark");
    mark.style.left = `${(100 * threshold) / scale}%`;
    mark.title = `${threshold}%`;
    meter.append(mark);
  }
  return meter;
}

function budgetScope(budget) {
  return budget.scope_value === "*" ? `every ${budget.scope} (each on its own)` : `${budget.scope}: ${budget.scope_value}`;
}

// Spent, held (reservations not yet settled) and what is left; a template's instance nearest
// its limit, flagged when it has nothing left.
function budgetHolding(budget) {
  const box = el("div", null, "holding");
  box.append(el("span", `${usd(budget.spent)} spent, ${usd(budget.held)} held, ${usd(budget.remaining)} left`));
  const top = (budget.top_instances || [])[0];
  if (top) {
    const full = Number(top.remaining) === 0;
    const line = el("div", null, full ? "top-instance at-limit" : "top-instance");
    line.append(
      el("span", `${budget.instances} ${budget.scope}s; nearest the limit: ${top.instance}, ` +
        `${usd(top.spent)} spent + ${usd(top.held)} held (${top.share}%)`),
    );
    if (full) line.append(" ", el("span", "at its limit", "badge limit"));
    box.append(line);
  }
  return box;
}

function renderBudgets(budgets) {
  const body = emptiedBody("budgets");
  for (const budget of budgets) {
    const row = el("tr");
    row.dataset.budgetId = budget.budget_id;
    const covers = el("td", budget.scope === "workspace" ? "whole workspace" : budgetScope(budget));
    if (budget.enforce) covers.append(" ", el("span", "hard limit", "badge enforced"));
    const used = el("td", null, "spend");
    used.append(el("span", `${usd(budget.spend)} of ${usd(budget.amount)} (${budget.percent}%)`), budgetMeter(budget));
    used.append(budgetHolding(budget));
    const thresholds = el("td");
    for (const threshold of budget.thresholds) {
      const reached = budget.crossed.includes(threshold);
      thresholds.append(el("span", `${threshold}%`, reached ? "threshold reached" : "threshold"));
    }
    const actions = el("td", null, "actions");
    const amount = el("input");
    amount.value = budget.amount;
    amount.setAttribute("aria-label", `New amount for ${budgetName(budget)}`);
    amount.size = 8;
    const save = el("button", "Save");
    save.type = "button";
    save.addEventListener("click", () => changeBudget(budget, { amount: amount.value.trim() }));
    const remove = deleteButton(() => deleteBudget(budget));
    actions.append(amount, save, remove);
    row.append(
      el("td", budgetName(budget)),
      covers,
      el("td", `${PERIOD_NAMES[budget.period] || budget.period} (${budget.window.from} to ${budget.window.to})`),
      used,
      thresholds,
      actions,
    );
    body.append(row);
  }
  if (!budgets.length) body.append(emptyRow(6, "No budgets yet."));
}

async function budgetAction(request, done) {
  try {
    await request();
    status(done);
    await loadBudgets();
    return true;
  } catch (error) {
    failed(error);
    return false;
  }
}

function changeBudget(budget, fields) {
  const path = `/v1/workspace/budgets/${encodeURIComponent(budget.budget_id)}`;
  return budgetAction(() => api(path, { method: "PATCH", body: JSON.stringify(fields) }), "Budget changed.");
}

function deleteBudget(budget) {
  if (!confirm(`Delete the budget ${budgetName(budget)}?`)) return;
  const path = `/v1/workspace/budgets/${encodeURIComponent(budget.budget_id)}`;
  return budgetAction(() => api(path, { method: "DELETE" }), "Budget deleted.");
}

$("new-budget").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = { amount: $("budget-amount").value.trim(), scope: $("budget-scope").value, period: $("budget-period").value };
  if ($("budget-value").value.trim()) body.scope_value = $("budget-value").value.trim();
  if ($("budget-name").value.trim()) body.name = $("budget-name").value.trim();
  const thresholds = $("budget-thresholds").value.trim();
  if (thresholds) body.thresholds = thresholds.split(",").map((part) => Number(part.trim()));
  budgetAction(() => api("/v1/workspace/budgets", { method: "POST", body: JSON.stringify(body) }), "Budget created.")
    .then((ok) => ok && $("new-budget").reset());
});

function renderWebhooks(webhooks) {
  const body = emptiedBody("webhooks");
  for (const webhook of webhooks) {
    const row = el("tr");
    row.dataset.endpointId = webhook.endpoint_id;
    const remove = deleteButton(() => {
      if (!confirm(`Stop sending alerts to ${webhook.url}?`)) return;
      const path = `/v1/workspace/webhooks/${encodeURIComponent(webhook.endpoint_id)}`;
      budgetAction(() => api(path, { method: "DELETE" }), "Webhook deleted.");
    });
    const actions = el("td", null, "actions");
    actions.append(remove);
    row.append(el("td", webhook.url), el("td", `${webhook.secret_prefix}…`), el("td", webhook.created_at.slice(0, 10)), actions);
    body.append(row);
  }
}

$("new-webhook").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    const created = await api("/v1/workspace/webhooks", {
      method: "POST",
      body: JSON.stringify({ url: $("webhook-url").value.trim() }),
    });
    const secret = $("new-webhook-secret");
    secret.hidden = false;
    secret.textContent = `Signing secret (shown once, copy it now): ${created.webhook.secret}`;
    $("webhook-url").value = "";
    await loadBudgets();
  } catch (error) {
    failed(error);
  }
});

// A page of deliveries, added below those shown.
function renderDeliveries(deliveries) {
  const body = $("deliveries").tBodies[0];
  for (const delivery of deliveries) {
    const last = delivery.attempts[delivery.attempts.length - 1];
    const outcome = last ? (last.error || `HTTP ${last.status}`) : "not attempted yet";
    const row = el("tr");
    row.append(
      el("td", delivery.created_at.replace("T", " ").slice(0, 19)),
      // A deleted budget's deliveries keep its id, all that is left of it.
      el("td", budgetNames.get(delivery.budget_id) || delivery.budget_id),
      el("td", `${delivery.threshold}%`, "num"),
      el("td", delivery.target === "sns" ? "SNS (email)" : delivery.url),
      el("td", delivery.state, `delivery-${delivery.state}`),
      el("td", delivery.attempts.length, "num"),
      el("td", outcome),
    );
    body.append(row);
  }
  deliveryList.shown += deliveries.length;
  $("deliveries-empty").hidden = deliveryList.shown > 0;
  showListEnd("more-deliveries", "deliveries-end", deliveryList.pager, deliveryList.shown);
}

// -- the burn-down: spend so far against the limit over the budget's window -----------------

const burn = { budgets: [] };

// The usage report that holds a budget's spend per day: its scope's group (a template's: its
// instance nearest the limit), or the whole workspace's days.
async function budgetDays(budget, from, to) {
  if (budget.scope === "workspace") {
    const report = await api(`/v1/workspace/usage?${range(from, to)}&group_by=day`);
    return report.groups.map((group) => ({ day: group.key, cost: group.cost }));
  }
  const value = budget.scope_value === "*" ? ((budget.top_instances || [])[0] || {}).instance : budget.scope_value;
  const report = await api(`/v1/workspace/usage?${range(from, to)}&group_by=${budget.scope}&daily=true`);
  const group = report.groups.find((g) => g.key === value);
  return group ? group.days : [];
}

async function drawBurnDown(budget) {
  if (!budget) {
    clearPlot("burn-chart", "No budgets yet.");
    $("burn-summary").textContent = "";
    return;
  }
  const { from, to } = budget.window;
  const last = to < today() ? to : today();
  const spent = new Map((await budgetDays(budget, from, last)).map((row) => [row.day, Number(row.cost)]));
  const days = rangeDays(from, to);
  const amount = Number(budget.amount);
  let total = 0;
  const cumulative = days.map((day) => {
    if (day > last) return null;
    total += spent.get(day) || 0;
    return total;
  });
  const pace = days.map((_, i) => (amount * (i + 1)) / days.length);
  lineChart("burn-chart", days, [
    { label: "Spent so far", values: cumulative },
    { label: "Limit", values: days.map(() => amount), color: "#be123c", points: false, dash: [6, 4] },
    { label: "Even pace", values: pace, color: "#6b7280", points: false, dash: [2, 4] },
  ]);
  const elapsed = days.filter((day) => day <= last).length;
  const projected = elapsed ? (total * days.length) / elapsed : 0;
  const summary = `${budgetName(budget)}: ${usd(total)} of ${usd(budget.amount)} spent from ${from} to ${last}` +
    ` (${elapsed} of ${days.length} days); at this pace ${usd(projected)} by ${to}` +
    (projected > amount ? ", over the limit." : ", within the limit.");
  $("burn-chart").setAttribute("aria-label", summary);
  $("burn-summary").textContent = summary;
}

$("burn-budget").addEventListener("change", () => {
  const budget = burn.budgets.find((b) => b.budget_id === $("burn-budget").value);
  loading(() => drawBurnDown(budget)).catch(failed);
});

async function loadBudgetsView() {
  const budgets = await loadBudgets();
  burn.budgets = budgets;
  const select = $("burn-budget");
  const keep = budgets.some((b) => b.budget_id === select.value) ? select.value : budgets.length ? budgets[0].budget_id : "";
  select.replaceChildren(...budgets.map((budget) => {
    const option = el("option", budgetName(budget));
    option.value = budget.budget_id;
    return option;
  }));
  select.value = keep;
  await drawBurnDown(budgets.find((b) => b.budget_id === keep));
}
