// costtrack dashboard: views with their own addresses, in the hash (the page stays one static
// file): "#/customers/cus_acme?from=2026-11-01&to=2026-11-30&feature=chat". Each path segment is
// percent-encoded (run ids carry ":" and "."), the period and the filters are the query, so a
// reload or a pasted link shows the same view. Loaded last: every view's loader is defined.
"use strict";

const PERIOD_KEYS = ["from", "to"];
const FILTER_KEYS = ["feature", "customer_id", "model", "status", "environment", "day"];

// path segments -> [section, title, loader]; a loader gets the decoded ids and the query.
const ROUTES = {
  overview: { section: "overview", title: () => "Overview", load: () => loadOverview() },
  customers: { section: "customers", title: () => "Customers", load: () => Promise.all([loadCustomers(), loadPortalTokens()]) },
  customer: { section: "subject", title: ([id]) => `Customer ${id}`, load: (ids, q) => loadSubject("customer", ids, q) },
  feature: { section: "subject", title: ([name]) => `Feature ${name}`, load: (ids, q) => loadSubject("feature", ids, q) },
  model: { section: "subject", title: (ids) => `Model ${ids.join("/")}`, load: (ids, q) => loadSubject("model", ids, q) },
  runs: { section: "runs", title: () => "Runs", load: (_, q) => loadRunsView(q) },
  run: { section: "run", title: ([id]) => `Run ${id}`, load: ([id]) => loadRun("run", id) },
  session: { section: "run", title: ([id]) => `Session ${id}`, load: ([id]) => loadRun("session", id) },
  budgets: { section: "budgets", title: () => "Budgets", load: () => loadBudgetsView() },
  reconciliation: { section: "reconciliation", title: () => "Reconciliation", load: () => loadReconciliation() },
  events: { section: "events", title: () => "Events", load: (_, q) => loadEventsView(q) },
  keys: { section: "keys", title: () => "Keys", load: () => loadKeys() },
  settings: { section: "settings", title: () => "Settings", load: () => loadSettings() },
};
// Which nav entry a view belongs to.
const NAV_OF = { customer: "customers", feature: "overview", model: "overview", run: "runs", session: "runs" };

// [route name, ids] for the hash's path segments, or null.
function matchRoute(segments) {
  const [head, ...rest] = segments;
  if (!segments.length) return ["overview", []];
  const single = ["overview", "customers", "runs", "budgets", "reconciliation", "events", "keys", "settings"];
  if (single.includes(head) && !rest.length) return [head, []];
  if (head === "customers" && rest.length === 1) return ["customer", rest];
  if (head === "features" && rest.length === 1) return ["feature", rest];
  if (head === "models" && rest.length === 2) return ["model", rest];
  if (head === "runs" && rest.length === 1) return ["run", rest];
  if (head === "sessions" && rest.length === 1) return ["session", rest];
  return null;
}

function parseLocation() {
  const raw = location.hash.replace(/^#/, "");
  const mark = raw.indexOf("?");
  const path = mark < 0 ? raw : raw.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? "" : raw.slice(mark + 1));
  try {
    return { segments: path.split("/").filter(Boolean).map(decodeURIComponent), query };
  } catch (error) {
    return { segments: null, query };  // a malformed %-escape
  }
}

// "#/a/b?x=1": each segment percent-encoded, the query's empty values left out.
function hashOf(segments, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const text = params.toString();
  return `#/${segments.map((segment) => encodeURIComponent(segment)).join("/")}${text ? `?${text}` : ""}`;
}

// The period as the address has it (nothing when it is the default, the last 30 days).
function periodQuery() {
  const query = {};
  for (const name of PERIOD_KEYS) if (state.query && state.query.get(name)) query[name] = state.query.get(name);
  return query;
}

// A link to a view over the same period, with these filters.
function viewLink(segments, filters = {}) {
  return hashOf(segments, { ...periodQuery(), ...filters });
}

function link(text, segments, filters, className) {
  const anchor = el("a", text, className);
  anchor.href = viewLink(segments, filters);
  return anchor;
}

// Open the same view with parts of its query changed (a period, a filter); null removes one.
function goWith(changes) {
  const { segments, query } = parseLocation();
  const merged = Object.fromEntries(query.entries());
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") delete merged[name];
    else merged[name] = value;
  }
  location.hash = hashOf(segments || ["overview"], merged);
}

// The period the address asks for, or the last 30 days; a bad one is said, not guessed at.
function applyPeriod(query) {
  const from = query.get("from");
  const to = query.get("to");
  if (from || to) {
    const first = from || daysBefore(to, 29);
    const last = to || today();
    const span = DAY_PATTERN.test(first) && DAY_PATTERN.test(last) ? spanDays(first, last) : 0;
    if (span >= 1 && span <= MAX_DAYS && !Number.isNaN(span)) {
      setRange(first, last);
      return null;
    }
    setRange(daysBefore(today(), 29), today());
    return `The link's period (${from || "?"} to ${to || "?"}) is not one the API answers: showing the last 30 days.`;
  }
  setRange(daysBefore(today(), 29), today());
  return null;
}

function renderFilterNote(query) {
  const shown = FILTER_KEYS.filter((name) => query.get(name)).map((name) => `${name.replace("_id", "")} ${query.get(name)}`);
  $("filter-note").hidden = !shown.length;
  $("filter-text").textContent = shown.length ? `Filtered: ${shown.join(", ")}.` : "";
  const { segments } = parseLocation();
  $("filter-clear").href = hashOf(segments || ["overview"], periodQuery());
}

async function route() {
  if ($("dashboard").hidden) return;
  const { segments, query } = parseLocation();
  let found = segments && matchRoute(segments);
  state.query = query;
  const periodProblem = applyPeriod(query);
  if (!found) {
    found = ["overview", []];
    status(`There is no view at ${location.hash}: this is the overview.`);
  } else if (periodProblem) {
    status(periodProblem);
  } else {
    status("");
  }
  const [name, ids] = found;
  const routeInfo = ROUTES[name];
  const generation = ++state.generation;
  for (const section of document.querySelectorAll(".view")) section.hidden = section.dataset.view !== routeInfo.section;
  const nav = NAV_OF[name] || name;
  for (const anchor of document.querySelectorAll("#views-nav a[data-nav]")) {
    anchor.href = hashOf([anchor.dataset.nav], periodQuery());
    if (anchor.dataset.nav === nav) anchor.setAttribute("aria-current", "page");
    else anchor.removeAttribute("aria-current");
  }
  for (const anchor of document.querySelectorAll("a[data-keep-period]")) {
    anchor.href = hashOf(anchor.getAttribute("href").replace(/^#\//, "").split("?")[0].split("/"), periodQuery());
  }
  document.title = `${routeInfo.title(ids)} · costtrack`;
  renderFilterNote(query);
  closeMenu();
  if (state.routed) {
    // A new view: keyboard and screen-reader focus goes to its heading, the page to the top.
    const heading = document.querySelector(`.view[data-view="${routeInfo.section}"] h1`);
    if (heading) {
      heading.tabIndex = -1;
      heading.focus({ preventScroll: true });
    }
    window.scrollTo(0, 0);
  }
  state.routed = true;
  try {
    await loading(() => routeInfo.load(ids, query, generation));
  } catch (error) {
    if (generation === state.generation) failed(error);
  }
}

// Whether a load that started for `generation` still shows (no other view opened since).
function current(generation) {
  return generation === undefined || generation === state.generation;
}

// -- the menu (a button below 760 px, the list itself above) ----------------------------------

function closeMenu() {
  $("menu-button").setAttribute("aria-expanded", "false");
  $("views-nav").classList.remove("open");
}

$("menu-button").addEventListener("click", () => {
  const open = $("menu-button").getAttribute("aria-expanded") !== "true";
  $("menu-button").setAttribute("aria-expanded", String(open));
  $("views-nav").classList.toggle("open", open);
  if (open) $("views-nav").querySelector("a").focus();
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && $("views-nav").classList.contains("open")) {
    closeMenu();
    $("menu-button").focus();
  }
});

window.addEventListener("hashchange", () => route());

document.addEventListener("DOMContentLoaded", () => {
  if (sessionStorage.getItem(TOKEN_KEY)) {
    start();
  } else {
    showSignIn("");
  }
});

// The skip link moves focus without changing the address (the hash is the view's).
$("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  $("view-main").focus();
});
