// costtrack dashboard: reads /v1/workspace/... with an admin token kept in sessionStorage.
// Everything the API returns is shown with textContent / createElement (never innerHTML):
// features, models and customer ids are whatever clients sent, so they are data, not markup.
"use strict";

const TOKEN_KEY = "costtrack.adminToken";
const DAY_MS = 86400000;
const MAX_DAYS = 366;  // the API's longest range
const state = { from: null, to: null, loading: 0, summary: null, generation: 0 };

const $ = (id) => document.getElementById(id);

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

// A table row of the given cells; a heading row of [text, className] pairs; a row that spans a
// table's columns to say it is empty.
function tableRow(...cells) {
  const row = el("tr");
  row.append(...cells);
  return row;
}

function headingRow(...headings) {
  return tableRow(...headings.map(([text, className]) => el("th", text, className)));
}

function emptyRow(columns, text) {
  const cell = el("td", text, "empty");
  cell.colSpan = columns;
  return tableRow(cell);
}

// Every amount goes through formatMoney (money.js), every count through formatCount.
const usd = formatMoney;
const number = formatCount;

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
  }
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}`, "Content-Type": "application/json" },
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

// -- date range (UTC days, as the API counts them) ------------------------------------------

const isoDay = (date) => date.toISOString().slice(0, 10);
const DAY_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

function today() {
  return isoDay(new Date());
}

function daysBefore(day, count) {
  return isoDay(new Date(Date.parse(`${day}T00:00:00Z`) - count * DAY_MS));
}

function spanDays(from, to) {
  return Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;
}

// Every day from `from` to `to` (default: the period), inclusive.
function rangeDays(from = state.from, to = state.to) {
  const days = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
    days.push(isoDay(new Date(t)));
  }
  return days;
}

function range(from = state.from, to = state.to) {
  return `from=${from}&to=${to}`;
}

// The period of the same length just before this one (the overview's "change").
function previousRange() {
  const span = spanDays(state.from, state.to);
  return { from: daysBefore(state.from, span), to: daysBefore(state.from, 1), span };
}

function setRange(from, to) {
  state.from = from;
  state.to = to;
  $("range-from").value = from;
  $("range-to").value = to;
  const span = spanDays(from, to);
  document.querySelectorAll(".ranges button[data-days]").forEach((button) => {
    button.setAttribute("aria-pressed", String(to === today() && Number(button.dataset.days) === span));
  });
}

function status(text) {
  $("status").textContent = text;
}

// "Loading…" while any load runs, and never after: the last one to finish clears it, unless a
// failure has replaced it with what went wrong.
async function loading(work) {
  state.loading += 1;
  status("Loading…");
  try {
    return await work();
  } finally {
    state.loading -= 1;
    if (!state.loading && $("status").textContent === "Loading…") status("");
  }
}

// -- sign in --------------------------------------------------------------------------------

function showSignIn(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("dashboard").hidden = true;
  $("sign-out").hidden = true;
  $("views-nav").hidden = true;
  $("menu-button").hidden = true;
  $("sign-in").hidden = false;
  $("workspace-name").textContent = "";
  $("sign-in-error").textContent = message || "";
  document.title = "Sign in · costtrack";
}

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  start();
});

$("sign-out").addEventListener("click", () => showSignIn(""));

// The period is part of the address (router.js): choosing one goes to the same view over it.
document.querySelectorAll(".ranges button[data-days]").forEach((button) => {
  button.addEventListener("click", () => {
    const to = today();
    goWith({ from: daysBefore(to, Number(button.dataset.days) - 1), to });
  });
});

$("range-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const from = $("range-from").value;
  const to = $("range-to").value;
  const span = Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;
  if (!from || !to || span < 1 || span > MAX_DAYS) {
    status(`Choose a first day on or before the last, at most ${MAX_DAYS} days apart.`);
    return;
  }
  goWith({ from, to });
});

async function start() {
  try {
    const summary = await api("/v1/workspace");
    $("sign-in").hidden = true;
    $("dashboard").hidden = false;
    $("sign-out").hidden = false;
    $("views-nav").hidden = false;
    $("menu-button").hidden = false;
    state.summary = summary;
    renderSummary(summary);
    await route();
  } catch (error) {
    failed(error);
  }
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) {
    showSignIn("That admin token is not valid (or was revoked).");
  } else {
    status(`Could not load: ${error.message}`);
  }
}

// -- summary --------------------------------------------------------------------------------

function renderSummary(summary) {
  const { plan, usage } = summary;
  $("workspace-name").textContent = `${summary.name} · ${plan.tier} plan · ${plan.status}`;
  const used = usage.included_used;
  const percent = plan.included_events ? Math.min(100, Math.round((100 * used) / plan.included_events)) : 100;
  $("allowance-fill").style.width = `${percent}%`;
  $("allowance-fill").classList.toggle("full", percent >= 100);
  $("allowance-meter").setAttribute("aria-valuenow", String(percent));
  $("allowance-text").textContent =
    `${number(used)} of ${number(plan.included_events)} included events used in ${usage.period} (${number(usage.included_left)} left)`;
  $("credits-text").textContent =
    plan.tier === "paid" ? `Pay-per-event credits: ${number(usage.credits_left)} left, ${number(usage.credits_used)} used this month` : "";
}

// A customer as people know it: their name, with the id beside it; the id alone without one.
function customerLabel(group) {
  if (group.key === "(none)") return ["No customer id"];
  return group.customer_name ? [group.customer_name, group.key] : [group.key];
}

function renderHidden(report) {
  const notice = $("hidden-notice");
  notice.hidden = !report.hidden_events;
  if (!report.hidden_events) return;
  $("hidden-count").textContent = "Some events are not shown";
  $("hidden-hint").textContent = report.hidden_notice;  // "N events hidden: <reason>. …" with what to check
}

function renderUnknown(models) {
  $("unknown-models-card").hidden = !models.length;
  $("unknown-models").replaceChildren(
    headingRow(["Model"], ["Events", "num"], ["Last seen"]),
    ...models.map((model) =>
      tableRow(el("td", model.model), el("td", number(model.events), "num"), el("td", model.last_seen))),
  );
}

function renderOverrides(overrides) {
  const rows = overrides.map((override) => {
    const price = override.discount_percent !== null
      ? `${override.discount_percent}% off`
      : Object.entries(override.prices).map(([name, value]) => `${name} ${value}`).join(", ");
    return tableRow(
      el("td", override.provider),
      el("td", override.model ?? "all models"),
      el("td", price),
      el("td", override.effective_from.slice(0, 10)),
      el("td", override.effective_to ? override.effective_to.slice(0, 10) : "open"),
    );
  });
  if (!rows.length) rows.push(emptyRow(5, "No negotiated prices: the catalogue's apply."));
  $("overrides").replaceChildren(headingRow(["Provider"], ["Model"], ["Price"], ["From"], ["Until"]), ...rows);
}

async function loadSettings() {
  const [overrides, anomalies, summary] = await Promise.all([
    api("/v1/workspace/price-overrides"),
    api("/v1/workspace/run-anomalies"),
    api("/v1/workspace"),
  ]);
  renderSummary(summary);
  renderOverrides(overrides.overrides);
  $("anomaly-settings").textContent = anomalies.enabled
    ? `On: a run is notified when it costs over its feature's p99 × ${anomalies.factor} or makes ${number(anomalies.calls)} calls or more.`
    : `Off (PUT /v1/workspace/run-anomalies turns it on). Its settings: p99 × ${anomalies.factor}, or ${number(anomalies.calls)} calls.`;
}

// -- keys ---------------------------------------------------------------------------------

const ACTIONS = { active: ["deactivate", "revoke"], inactive: ["reactivate", "revoke"], revoked: [] };

async function loadKeys() {
  // Every key: the list's pages to its end (a workspace has few; a page holds 200).
  const pager = new Pager(
    (cursor) => api(`/v1/workspace/keys${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`),
    "next_cursor",
  );
  const keys = [];
  while (!pager.ended) keys.push(...(await pager.next()).keys);
  const body = $("keys").tBodies[0];
  body.replaceChildren();
  for (const key of keys) {
    const row = el("tr");
    row.dataset.keyId = key.key_id;
    const actions = el("td", null, "actions");
    for (const action of ACTIONS[key.state] || []) {
      const button = el("button", action[0].toUpperCase() + action.slice(1), action === "revoke" ? "danger" : "");
      button.type = "button";
      button.addEventListener("click", () => changeKey(key, action, button));
      actions.append(button);
    }
    row.append(
      el("td", key.prefix + "…"),
      el("td", key.name || ""),
      el("td", key.state, `state-${key.state}`),
      el("td", key.bound || "any source"),
      el("td", key.created_at.slice(0, 10)),
      el("td", key.last_used_at ? key.last_used_at.replace("T", " ").slice(0, 16) : "never"),
      actions,
    );
    body.append(row);
  }
}

async function changeKey(key, action, button) {
  if (action === "revoke" && !confirm(`Revoke ${key.prefix}…? A revoked key cannot be reactivated.`)) return;
  button.disabled = true;
  try {
    await api(`/v1/workspace/keys/${encodeURIComponent(key.key_id)}/${action}`, { method: "POST" });
    status(`Key ${key.prefix}… ${action}d.`);
    await loadKeys();
  } catch (error) {
    button.disabled = false;
    failed(error);
  }
}

$("new-key").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = {};
  if ($("new-key-name").value.trim()) body.name = $("new-key-name").value.trim();
  if ($("new-key-bind").value.trim()) body.bind = $("new-key-bind").value.trim();
  try {
    const created = await api("/v1/workspace/keys", { method: "POST", body: JSON.stringify(body) });
    const secret = $("new-key-secret");
    secret.hidden = false;
    secret.textContent = `New key (shown once, copy it now): ${created.api_key}`;
    $("new-key-name").value = "";
    $("new-key-bind").value = "";
    await loadKeys();
  } catch (error) {
    failed(error);
  }
});

// -- go -----------------------------------------------------------------------------------

$("range-from").max = today();
$("range-to").max = today();
