// costtrack dashboard: the event list, its filters (the API's: feature, customer_id, provider +
// model, status, environment) and its CSV download. Loaded after app.js, whose helpers it uses
// ($, el, api, usd, number, emptyRow, state, failed).
"use strict";

const EVENT_PAGE = 25;
const shownEvents = [];  // what the table shows, in order: the CSV is made of these
const CSV_COLUMNS = [
  "received_at", "event_id", "provider", "model", "feature", "customer_id", "customer_name", "environment",
  "status", "prompt_tokens", "completion_tokens", "total_tokens", "cost", "currency", "pricing_status",
];

// The filters as the API reads them; "provider/model" in the model field filters on both.
function eventFilters() {
  const filters = {};
  for (const name of ["feature", "customer_id", "status", "environment"]) {
    const value = $(`filter-${name}`).value.trim();
    if (value) filters[name] = value;
  }
  const model = $("filter-model").value.trim();
  const slash = model.indexOf("/");
  if (slash > 0) {
    filters.provider = model.slice(0, slash);
    filters.model = model.slice(slash + 1);
  } else if (model) {
    filters.model = model;
  }
  return filters;
}

async function loadEvents(reset) {
  const query = new URLSearchParams({ limit: String(EVENT_PAGE), ...eventFilters() });
  if (!reset && state.cursor) query.set("cursor", state.cursor);
  const page = await api(`/v1/workspace/events?${query}`);
  const body = $("events").tBodies[0];
  if (reset) {
    body.replaceChildren();
    shownEvents.length = 0;
  }
  for (const event of page.events) {
    shownEvents.push(event);
    const row = el("tr");
    row.dataset.eventId = event.event_id;
    const customer = el("td", event.customer_name || event.customer_id || "–");
    if (event.customer_name) customer.title = event.customer_id;
    row.append(
      el("td", event.received_at.replace("T", " ").slice(0, 19)),
      el("td", `${event.provider}/${event.model}`),
      el("td", event.feature),
      customer,
      el("td", event.environment || "–"),
      el("td", event.status),
      el("td", number(event.total_tokens), "num"),
      // Unpriced is a state, not $0: the event is priced once its model's price arrives.
      el("td", event.pricing_status === "unknown_model" ? "unpriced" : usd(event.cost), "num"),
    );
    body.append(row);
  }
  if (reset && !page.events.length) {
    body.append(emptyRow(8, Object.keys(eventFilters()).length ? "No events match these filters." : "No events yet."));
  }
  state.cursor = page.next_cursor;
  $("more-events").hidden = !page.next_cursor;
  $("events-count").textContent = `${number(shownEvents.length)} shown${page.next_cursor ? " (more to load)" : ""}`;
  $("events-csv").disabled = !shownEvents.length;
}

$("more-events").addEventListener("click", () => loadEvents(false).catch(failed));

$("event-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  loadEvents(true).catch(failed);
});

$("event-filters").addEventListener("reset", () => {
  setTimeout(() => loadEvents(true).catch(failed), 0);  // after the form has cleared its fields
});

// A cell as RFC 4180 writes it; text a spreadsheet would run as a formula starts with a quote.
function csvCell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function eventsCsv(events) {
  const lines = [CSV_COLUMNS.join(",")];
  for (const event of events) lines.push(CSV_COLUMNS.map((column) => csvCell(event[column])).join(","));
  return lines.join("\r\n") + "\r\n";
}

$("events-csv").addEventListener("click", () => {
  const blob = new Blob([eventsCsv(shownEvents)], { type: "text/csv;charset=utf-8" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = `costtrack-events-${new Date().toISOString().slice(0, 19).replace(/:/g, "")}Z.csv`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 0);
});

// The filters' suggestions: what the usage report of the chosen range has.
function suggestFilters(features, models, customers) {
  const fill = (id, options) => $(id).replaceChildren(...options.map(([value, label]) => {
    const option = el("option");
    option.value = value;
    if (label) option.label = label;
    return option;
  }));
  fill("feature-options", features.map((group) => [group.key]));
  fill("model-options", models.map((group) => [group.key]));
  fill("customer-options", customers.filter((group) => group.key !== "(none)").map((group) => [group.key, group.customer_name]));
}
