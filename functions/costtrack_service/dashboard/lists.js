// costtrack dashboard: paged lists (events, runs) and their rows. Loaded after app.js and
// charts.js, whose helpers it uses ($, el, api, usd, number, tableRow, link).
"use strict";

// The pages of a cursor list. It ends when a page has no cursor (null or absent), and stops on
// a cursor it has already followed: a server that answers the same cursor twice would have the
// list load the same page for ever.
class Pager {
  constructor(fetchPage, cursorField) {
    this.fetchPage = fetchPage;  // cursor (null: the first page) -> the API's answer
    this.cursorField = cursorField;  // "next_cursor" (events) or "cursor" (runs)
    this.cursor = null;
    this.followed = new Set();
    this.ended = null;  // null while there is more; "end" or "repeated" once it stops
  }

  async next() {
    if (this.ended) return null;
    const page = await this.fetchPage(this.cursor);
    const cursor = page[this.cursorField];
    if (!cursor) {
      this.ended = "end";
    } else if (this.followed.has(cursor)) {
      this.ended = "repeated";
    } else {
      this.followed.add(cursor);
      this.cursor = cursor;
    }
    return page;
  }
}

// What a list's foot says once its pager has stopped.
function endOfList(pager, shown) {
  if (pager.ended === "repeated") return `Stopped after ${number(shown)}: the server gave the same page cursor twice.`;
  if (pager.ended === "end") return shown ? `End of list (${number(shown)}).` : "";
  return "";
}

// A list's "Load more" button and foot after a page: hidden with the reason once it has stopped.
function showListEnd(buttonId, endId, pager, shown) {
  $(buttonId).hidden = Boolean(pager.ended);
  $(endId).textContent = endOfList(pager, shown);
}

const eventTime = (event) => event.received_at.replace("T", " ").slice(0, 19);

// The events of a period matching `filters` (the API's), newest first: pages until one reaches
// before the period, at most `max` events. complete: false when it stopped at `max`.
async function eventsInPeriod(filters, from, to, max = 2000) {
  const pager = new Pager((cursor) => {
    const query = new URLSearchParams({ limit: "200", ...filters });
    if (cursor) query.set("cursor", cursor);
    return api(`/v1/workspace/events?${query}`);
  }, "next_cursor");
  const found = [];
  const last = `${to}T23:59:59.999999Z`;
  const first = `${from}T00:00:00Z`;
  let seen = 0;
  while (!pager.ended && seen < max) {
    const page = await pager.next();
    seen += page.events.length;
    for (const event of page.events) {
      if (event.received_at <= last && event.received_at >= first) found.push(event);
    }
    const oldest = page.events[page.events.length - 1];
    if (!oldest || oldest.received_at < first) return { events: found, complete: true };
  }
  return { events: found, complete: Boolean(pager.ended) };
}

// Cost and events per key of a list of events, most expensive first (as the usage report's groups).
function groupEvents(events, key) {
  const groups = new Map();
  for (const event of events) {
    const name = key(event);
    const group = groups.get(name) || { key: name, cost: 0, events: 0, label: event };
    group.cost += Number(event.cost);
    group.events += 1;
    groups.set(name, group);
  }
  return [...groups.values()].sort((a, b) => b.cost - a.cost || String(a.key).localeCompare(String(b.key)));
}

function customerCell(event) {
  if (!event.customer_id) return el("td", "–");
  const cell = el("td");
  cell.append(link(event.customer_name || event.customer_id, ["customers", event.customer_id]));
  if (event.customer_name) cell.title = event.customer_id;
  return cell;
}

// Unpriced is a state, not $0: the event is priced once its model's price arrives.
const eventCost = (event) => (event.pricing_status === "unknown_model" ? "unpriced" : usd(event.cost));

function runLink(traceId) {
  return link(traceId, ["runs", traceId]);
}

// A run of a runs list: its id (a link to its calls), name, calls, status and cost.
function runRow(run, extra = []) {
  const first = el("td");
  first.append(runLink(run.trace_id));
  return tableRow(
    first,
    el("td", run.run_name || ""),
    el("td", number(run.total.calls), "num"),
    el("td", run.total.status, run.total.status === "success" ? "" : "bad"),
    el("td", usd(run.total.cost), "num"),
    ...extra,
  );
}
