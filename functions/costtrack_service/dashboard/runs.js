// costtrack dashboard: a run's (or a session's) view: its calls as a timeline, grouped by step
// (parent_id; a session's by run), each call's cost and latency, and its cost by model and by
// step. Loaded after app.js, charts.js and lists.js, whose helpers it uses.
"use strict";

const ms = (iso) => Date.parse(iso);
// A run or session id in the API's path: as it is when it has only the characters the API allows
// there ("run:x.1"; the API checks the pattern before decoding, so "%3A" is refused), else encoded.
const RUN_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const pathId = (id) => (RUN_ID.test(id) ? id : encodeURIComponent(id));

function seconds(value) {
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(value < 10000 ? 2 : 1)} s`;
}

// Each call's start and end on the run's clock: a call is received when it ends, so it started
// its latency earlier (a call without a latency is a point).
function callSpans(calls) {
  const spans = calls.map((call) => {
    const end = ms(call.received_at);
    const latency = Number.isFinite(call.latency_ms) ? call.latency_ms : null;
    return { call, start: latency === null ? end : end - latency, end, latency };
  });
  const first = Math.min(...spans.map((span) => span.start));
  const last = Math.max(...spans.map((span) => span.end));
  return { spans, first, length: Math.max(last - first, 1) };
}

function timelineCall(span, first, length) {
  const { call } = span;
  const item = el("li", null, call.status === "success" ? "call" : "call failed");
  item.dataset.eventId = call.event_id;
  const label = el("span", null, "call-label");
  label.append(
    el("span", `+${seconds(span.start - first)}`, "call-at"),
    " ",
    link(`${call.provider}/${call.model}`, ["models", call.provider, call.model]),
  );
  if (call.status !== "success") label.append(" ", el("span", call.status, "badge bad"));
  const track = el("span", null, "call-track");
  track.setAttribute("aria-hidden", "true");
  const bar = el("span", null, "call-bar");
  bar.style.left = `${(100 * (span.start - first)) / length}%`;
  bar.style.width = `${Math.max(0.6, (100 * (span.end - span.start)) / length)}%`;
  track.append(bar);
  const figures = el("span", `${usd(call.cost)} · ${span.latency === null ? "latency not reported" : seconds(span.latency)}`, "call-figures");
  item.append(label, figures, track);
  return item;
}

// Steps (or a session's runs) in the order of their first call, each with its calls.
function renderTimeline(answer, kind) {
  const { spans, first, length } = callSpans(answer.calls);
  const part = kind === "run" ? (call) => call.parent_id : (call) => call.trace_id;
  const totals = new Map((kind === "run" ? answer.by_step : answer.by_run).map((split) => [split[kind === "run" ? "parent_id" : "trace_id"], split]));
  const groups = new Map();
  for (const span of spans) {
    const key = part(span.call) ?? null;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(span);
  }
  const list = $("run-timeline");
  list.replaceChildren();
  for (const [key, members] of groups) {
    const step = el("li", null, "step");
    const head = el("p", null, "step-head");
    const total = totals.get(key);
    if (kind === "session" && key) head.append(el("span", "Run ", "muted"), runLink(key));
    else head.append(el("strong", key === null ? (kind === "run" ? "No step" : "No run") : key));
    head.append(el("span", ` · ${number(members.length)} call${members.length === 1 ? "" : "s"}${total ? ` · ${usd(total.cost)}` : ""}`, "muted"));
    const calls = el("ol", null, "calls");
    calls.append(...members.map((span) => timelineCall(span, first, length)));
    step.append(head, calls);
    list.append(step);
  }
  if (!answer.calls.length) list.append(el("li", "No calls listed (expired).", "empty"));
}

async function loadRun(kind, id, query, generation) {
  const path = kind === "run" ? "runs" : "sessions";
  $("run-kind").textContent = kind === "run" ? "Run" : "Session";
  $("run-title").textContent = `${kind === "run" ? "Run" : "Session"} ${id}`;
  let answer;
  try {
    answer = await api(`/v1/workspace/${path}/${pathId(id)}`);
  } catch (error) {
    if (!(error instanceof ApiError) || ![400, 404].includes(error.status)) throw error;
    $("run-summary").textContent = `No ${kind} ${id} in this workspace (or its events have expired).`;
    $("run-links").replaceChildren();
    $("run-timeline").replaceChildren();
    $("run-by-model").replaceChildren();
    $("run-by-part").replaceChildren();
    return;
  }
  if (!current(generation)) return;
  const { total } = answer;
  $("run-title").textContent = `${kind === "run" ? "Run" : "Session"} ${id}${answer.run_name ? ` (${answer.run_name})` : ""}`;
  const latency = total.latency_ms === null || total.latency_ms === undefined ? "" : `, ${seconds(total.latency_ms)}`;
  $("run-summary").textContent =
    `${usd(total.cost)} · ${number(total.calls)} calls (${number(total.failed_calls)} failed) · ${total.status}${latency} · ` +
    `${total.first_at.replace("T", " ").slice(0, 19)} to ${total.last_at.replace("T", " ").slice(0, 19)} UTC` +
    (answer.calls_complete ? "" : " · not every call is listed");
  const links = $("run-links");
  links.replaceChildren("Feature ", link(answer.feature, ["features", answer.feature]));
  if (answer.customer_id) links.append(" · customer ", link(answer.customer_id, ["customers", answer.customer_id]));
  if (kind === "run" && answer.session_id) links.append(" · session ", link(answer.session_id, ["sessions", answer.session_id]));
  $("timeline-title").textContent = kind === "run" ? "Calls by step" : "Calls by run";
  renderTimeline(answer, kind);
  const models = answer.by_model.map((split) => ({ key: split.model, cost: split.cost, events: split.calls }));
  renderTop("run-by-model", models, (group) => [group.key], (group) => viewLink(["models", ...group.key.split(/\/(.*)/s).slice(0, 2)]));
  $("run-by-part-title").textContent = kind === "run" ? "By step" : "By run";
  const parts = (kind === "run" ? answer.by_step : answer.by_run).map((split) => ({
    key: (kind === "run" ? split.parent_id : split.trace_id) ?? "(none)", cost: split.cost, events: split.calls,
  }));
  renderTop("run-by-part", parts, (group) => [group.key], kind === "run" ? null : (group) => viewLink(["runs", group.key]));
}
