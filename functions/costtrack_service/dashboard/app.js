// costtrack dashboard: reads /v1/workspace/... with an admin token kept in sessionStorage.
// Everything the API returns is shown with textContent / createElement (never innerHTML):
// features, models and customer ids are whatever clients sent, so they are data, not markup.
"use strict";

const TOKEN_KEY = "costtrack.adminToken";
const SVG = "http://www.w3.org/2000/svg";
const state = { days: 30, cursor: null };

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

function usd(cost) {
  // Costs arrive as exact decimal strings; show them as they are, never through a float.
  return "$" + (cost ?? "0");
}

function number(value) {
  return Number(value ?? 0).toLocaleString("en-US");
}

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

function range() {
  const to = new Date();
  const from = new Date(to.getTime() - (state.days - 1) * 86400000);
  const day = (d) => d.toISOString().slice(0, 10);
  return `from=${day(from)}&to=${day(to)}`;
}

function status(text) {
  $("status").textContent = text;
}

// -- sign in --------------------------------------------------------------------------------

function showSignIn(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("dashboard").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("workspace-name").textContent = "";
  $("sign-in-error").textContent = message || "";
}

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  start();
});

$("sign-out").addEventListener("click", () => showSignIn(""));

document.querySelectorAll(".ranges button").forEach((button) => {
  button.addEventListener("click", () => {
    state.days = Number(button.dataset.days);
    document.querySelectorAll(".ranges button").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
    loadUsage().catch(failed);
  });
});

async function start() {
  try {
    const summary = await api("/v1/workspace");
    $("sign-in").hidden = true;
    $("dashboard").hidden = false;
    $("sign-out").hidden = false;
    renderSummary(summary);
    await Promise.all([loadUsage(), loadEvents(true), loadKeys()]);
    status("");
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

// -- summary and usage --------------------------------------------------------------------

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

async function loadUsage() {
  status("Loading…");
  const [byDay, byFeature, byModel, byCustomer, unknown, overrides] = await Promise.all([
    api(`/v1/workspace/usage?${range()}&group_by=day`),
    api(`/v1/workspace/usage?${range()}&group_by=feature`),
    api(`/v1/workspace/usage?${range()}&group_by=model`),
    api(`/v1/workspace/usage?${range()}&group_by=customer`),
    api(`/v1/workspace/unknown-models?${range()}`),
    api("/v1/workspace/price-overrides"),
  ]);
  $("total-cost").textContent = usd(byDay.totals.cost);
  $("total-events").textContent = number(byDay.totals.events);
  $("total-tokens").textContent = number(byDay.totals.tokens);
  renderHidden(byDay);
  renderChart(byDay);
  renderTop("top-feature", byFeature.groups);
  renderTop("top-model", byModel.groups);
  renderTop("top-customer", byCustomer.groups);
  renderUnknown(unknown.models);
  renderOverrides(overrides.overrides);
  status("");
}

function renderHidden(report) {
  const notice = $("hidden-notice");
  notice.hidden = !report.hidden_events;
  if (!report.hidden_events) return;
  $("hidden-count").textContent = "Some events are not shown";
  $("hidden-hint").textContent = report.hidden_notice;  // "N events hidden: <reason>. …" with what to check
}

function renderChart(report) {
  const container = $("chart");
  container.replaceChildren();
  const days = [];
  const byDay = new Map(report.groups.map((group) => [group.key, group]));
  const today = new Date();
  for (let i = state.days - 1; i >= 0; i--) {
    const key = new Date(today.getTime() - i * 86400000).toISOString().slice(0, 10);
    days.push({ key, group: byDay.get(key) });
  }
  if (!report.groups.length) {
    container.append(el("p", "No events in this period.", "empty"));
    return;
  }
  const width = 900;
  const height = 220;
  const left = 48;
  const bottom = 20;
  const max = Math.max(...days.map((d) => Number(d.group ? d.group.cost : 0)), 0);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Cost per day");
  const axis = document.createElementNS(SVG, "line");
  axis.setAttribute("x1", String(left));
  axis.setAttribute("x2", String(width));
  axis.setAttribute("y1", String(height - bottom));
  axis.setAttribute("y2", String(height - bottom));
  axis.setAttribute("class", "axis");
  svg.append(axis);
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", "0");
  label.setAttribute("y", "12");
  label.textContent = usd(max ? String(max) : "0");
  svg.append(label);
  const slot = (width - left) / days.length;
  days.forEach((day, index) => {
    const value = Number(day.group ? day.group.cost : 0);
    const barHeight = max ? ((height - bottom - 16) * value) / max : 0;
    const bar = document.createElementNS(SVG, "rect");
    bar.setAttribute("x", String(left + index * slot + slot * 0.15));
    bar.setAttribute("width", String(slot * 0.7));
    bar.setAttribute("y", String(height - bottom - barHeight));
    bar.setAttribute("height", String(Math.max(barHeight, value ? 1 : 0)));
    bar.setAttribute("class", "bar");
    bar.setAttribute("data-day", day.key);
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${day.key}: ${usd(day.group ? day.group.cost : "0")}, ${number(day.group ? day.group.events : 0)} events`;
    bar.append(title);
    svg.append(bar);
    if (index % Math.ceil(days.length / 10) === 0) {
      const tick = document.createElementNS(SVG, "text");
      tick.setAttribute("x", String(left + index * slot));
      tick.setAttribute("y", String(height - 4));
      tick.textContent = day.key.slice(5);
      svg.append(tick);
    }
  });
  container.append(svg);
}

function renderTop(id, groups) {
  const rows = groups.slice(0, 8).map((group) =>
    tableRow(el("td", group.key), el("td", number(group.events), "num"), el("td", usd(group.cost), "num")));
  $(id).replaceChildren(
    headingRow(["Name"], ["Events", "num"], ["Cost", "num"]),
    ...(rows.length ? rows : [emptyRow(3, "No events")]),
  );
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
  $("overrides-card").hidden = !overrides.length;
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
  $("overrides").replaceChildren(headingRow(["Provider"], ["Model"], ["Price"], ["From"], ["Until"]), ...rows);
}

// -- events -------------------------------------------------------------------------------

async function loadEvents(reset) {
  const query = new URLSearchParams({ limit: "25" });
  if (!reset && state.cursor) query.set("cursor", state.cursor);
  const page = await api(`/v1/workspace/events?${query}`);
  const body = $("events").tBodies[0];
  if (reset) body.replaceChildren();
  for (const event of page.events) {
    const row = el("tr");
    row.dataset.eventId = event.event_id;
    row.append(
      el("td", event.received_at.replace("T", " ").slice(0, 19)),
      el("td", `${event.provider}/${event.model}`),
      el("td", event.feature),
      el("td", event.customer_id || "–"),
      el("td", event.status),
      el("td", number(event.total_tokens), "num"),
      // Unpriced is a state, not $0: the event is priced once its model's price arrives.
      el("td", event.pricing_status === "unknown_model" ? "unpriced" : usd(event.cost), "num"),
    );
    body.append(row);
  }
  if (reset && !page.events.length) body.append(emptyRow(7, "No events yet."));
  state.cursor = page.next_cursor;
  $("more-events").hidden = !page.next_cursor;
}

$("more-events").addEventListener("click", () => loadEvents(false).catch(failed));

// -- keys ---------------------------------------------------------------------------------

const ACTIONS = { active: ["deactivate", "revoke"], inactive: ["reactivate", "revoke"], revoked: [] };

async function loadKeys() {
  const { keys } = await api("/v1/workspace/keys");
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

if (sessionStorage.getItem(TOKEN_KEY)) {
  start();
} else {
  showSignIn("");
}
