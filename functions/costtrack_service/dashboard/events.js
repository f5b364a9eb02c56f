// costtrack dashboard: the events view: its filters (the API's: feature, customer_id, provider +
// model, status, environment; and a day, which the list pages to), its CSV download. Loaded
// after app.js, charts.js and lists.js, whose helpers it uses.
"use strict";

const EVENT_PAGE = 25;
const shownEvents = [];  // what the table shows, in order: the CSV is made of these
const CSV_COLUMNS = [
  "received_at", "event_id", "provider", "model", "feature", "customer_id", "customer_name", "environment",
  "status", "prompt_tokens", "completion_tokens", "total_tokens", "cost", "currency", "pricing_status",
];

const eventList = { pager: null, day: null, filters: {} };

// The filters as the API reads them, from the address; "provider/model" filters on both.
function eventFilters(query) {
  const filters = {};
  for (const name of ["feature", "customer_id", "status", "environment"]) {
    const value = (query.get(name) || "").trim();
    if (value) filters[name] = value;
  }
  const model = (query.get("model") || "").trim();
  const slash = model.indexOf("/");
  if (slash > 0) {
    filters.provider = model.slice(0, slash);
    filters.model = model.slice(slash + 1);
  } else if (model) {
    filters.model = model;
  }
  return filters;
}

function eventRow(event) {
  const row = el("tr");
  row.dataset.eventId = event.event_id;
  const model = el("td");
  model.append(link(`${event.provider}/${event.model}`, ["models", event.provider, event.model]));
  const feature = el("td");
  feature.append(link(event.feature, ["features", event.feature]));
  if (event.trace_id) {  // the run it was a call of
    const run = link("run", ["runs", event.trace_id], {}, "run-link");
    run.title = event.trace_id;
    run.setAttribute("aria-label", `run ${event.trace_id}`);
    feature.append(" · ", run);
  }
  row.append(
    el("td", eventTime(event)),
    model,
    feature,
    customerCell(event),
    el("td", event.environment || "–"),
    el("td", event.status, event.status === "success" ? "" : "bad"),
    el("td", number(event.total_tokens), "num"),
    el("td", eventCost(event), "num"),
  );
  return row;
}

// The events view: its filters are the address's (a day among them), its list pages on.
async function loadEventsView(query) {
  for (const name of ["feature", "customer_id", "model", "status", "environment", "day"]) {
    $(`filter-${name}`).value = query.get(name) || "";
  }
  $("filter-day").max = today();
  eventList.filters = eventFilters(query);
  const day = query.get("day");
  eventList.day = day && DAY_PATTERN.test(day) ? day : null;
  eventList.pager = new Pager((cursor) => {
    const params = new URLSearchParams({ limit: String(eventList.day ? 200 : EVENT_PAGE), ...eventList.filters });
    if (cursor) params.set("cursor", cursor);
    return api(`/v1/workspace/events?${params}`);
  }, "next_cursor");
  await Promise.all([loadEventPage(true), loadSuggestions()]);
}

// The next page; with a day, pages on until that day's events are reached and stops after it.
async function loadEventPage(reset) {
  const { pager, day } = eventList;
  const body = $("events").tBodies[0];
  let added = 0;
  let emptied = !reset;
  do {
    const page = await pager.next();
    if (pager !== eventList.pager) return;  // another list was asked for meanwhile
    if (!emptied) {  // the old list stays until the new one's first page is in
      body.replaceChildren();
      shownEvents.length = 0;
      emptied = true;
    }
    if (!page) break;
    for (const event of page.events) {
      if (day && event.received_at.slice(0, 10) !== day) continue;
      shownEvents.push(event);
      body.append(eventRow(event));
      added += 1;
    }
    const oldest = page.events[page.events.length - 1];
    if (day && (!oldest || oldest.received_at.slice(0, 10) < day)) pager.ended = "end";
  } while (day && !added && !pager.ended);
  if (reset && !shownEvents.length) {
    const filtered = Object.keys(eventList.filters).length || day;
    body.append(emptyRow(8, filtered ? "No events match these filters." : "No events yet."));
  }
  showListEnd("more-events", "events-end", pager, shownEvents.length);
  const more = pager.ended ? "" : " (more to load)";
  $("events-count").textContent = `${number(shownEvents.length)} shown${day ? ` on ${day}` : ""}${more}`;
  $("events-csv").disabled = !shownEvents.length;
}

$("more-events").addEventListener("click", () => loading(() => loadEventPage(false)).catch(failed));

// Filtering opens the events view with the filters in its address (a link to share).
$("event-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  const changes = {};
  for (const name of ["feature", "customer_id", "model", "status", "environment", "day"]) {
    changes[name] = $(`filter-${name}`).value.trim() || null;
  }
  goWith(changes);
});

$("event-filters").addEventListener("reset", (event) => {
  event.preventDefault();
  goWith(Object.fromEntries(["feature", "customer_id", "model", "status", "environment", "day"].map((name) => [name, null])));
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

// The filters' suggestions: what the period's usage report has.
async function loadSuggestions() {
  const [features, models, customers] = await Promise.all(
    ["feature", "model", "customer"].map((by) => api(`/v1/workspace/usage?${range()}&group_by=${by}`)),
  );
  const fill = (id, options) => $(id).replaceChildren(...options.map(([value, label]) => {
    const option = el("option");
    option.value = value;
    if (label) option.label = label;
    return option;
  }));
  fill("feature-options", features.groups.map((group) => [group.key]));
  fill("model-options", models.groups.map((group) => [group.key]));
  fill("customer-options", customers.groups.filter((group) => group.key !== "(none)").map((group) => [group.key, group.customer_name]));
}
