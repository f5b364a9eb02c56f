// The customer portal (docs/guides/portal.md): one customer's usage, read with the portal token
// the page was opened with. The token comes from the URL's fragment (never sent to a server)
// and is then taken out of the address bar; nothing else in the URL is read, so no link can make
// this page show anything but what its token may read. Everything shown is text (textContent,
// SVG attributes): a customer's or a feature's name is never markup.
"use strict";

(function () {
  const TOKEN_KEY = "costtrack-portal-token";
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_PAGES = 20;

  function tokenFromFragment() {
    const fragment = new URLSearchParams(window.location.hash.slice(1));
    const token = fragment.get("token");
    if (token && token.startsWith("ctp_")) {
      try { window.sessionStorage.setItem(TOKEN_KEY, token); } catch (error) { /* storage refused: this load only */ }
      window.history.replaceState(null, "", window.location.pathname + window.location.search);
      return token;
    }
    try { return window.sessionStorage.getItem(TOKEN_KEY); } catch (error) { return null; }
  }

  function day(date) { return date.toISOString().slice(0, 10); }

  function range(choice) {
    const today = new Date();
    const to = day(today);
    if (choice === "month") return { from: to.slice(0, 8) + "01", to: to };
    const first = new Date(today.getTime() - (Number(choice) - 1) * 86400000);
    return { from: day(first), to: to };
  }

  function money(exact, currency) {
    const number = Number(exact);
    const options = { minimumFractionDigits: 2, maximumFractionDigits: 6 };
    if (currency) {
      try {
        return new Intl.NumberFormat(undefined, { ...options, style: "currency", currency: currency }).format(number);
      } catch (error) { /* an unknown code: shown beside the figure */ }
      return new Intl.NumberFormat(undefined, options).format(number) + " " + currency;
    }
    return new Intl.NumberFormat(undefined, options).format(number);
  }

  function count(value) { return new Intl.NumberFormat().format(value); }

  function calls(value) { return count(value) + (value === 1 ? " call" : " calls"); }

  function setText(id, text) { document.getElementById(id).textContent = text; }

  function status(text, bad) {
    const element = document.getElementById("status");
    element.textContent = text;
    element.hidden = !text;
    element.classList.toggle("bad", Boolean(bad));
  }

  async function fetchUsage(token, period) {
    let cursor = null;
    let usage = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const query = new URLSearchParams({ from: period.from, to: period.to, limit: "1000" });
      if (cursor) query.set("cursor", cursor);
      const response = await fetch("/v1/portal/usage?" + query.toString(), {
        headers: { Authorization: "Bearer " + token },
        cache: "no-store",
        referrerPolicy: "no-referrer",
      });
      const body = await response.json().catch(() => null);
      if (!response.ok) {
        const error = new Error((body && body.error && body.error.message) || "The usage could not be read.");
        error.status = response.status;
        throw error;
      }
      if (usage === null) usage = body; else usage.lines = usage.lines.concat(body.lines);
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    return usage;
  }

  function daysOf(period) {
    const days = [];
    for (let at = new Date(period.from + "T00:00:00Z"); day(at) <= period.to; at = new Date(at.getTime() + 86400000)) {
      days.push(day(at));
    }
    return days;
  }

  function barChart(id, days, values, className, label) {
    const holder = document.getElementById(id);
    holder.replaceChildren();
    const width = 600, height = 160, bottom = 2;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("preserveAspectRatio", "none");
    const most = Math.max(0, ...values);
    const step = width / Math.max(1, days.length);
    days.forEach(function (name, index) {
      const value = values[index];
      const tall = most > 0 ? (value / most) * (height - bottom - 4) : 0;
      const bar = document.createElementNS(SVG, "rect");
      bar.setAttribute("class", className);
      bar.setAttribute("x", String(index * step + step * 0.1));
      bar.setAttribute("y", String(height - bottom - tall));
      bar.setAttribute("width", String(Math.max(1, step * 0.8)));
      bar.setAttribute("height", String(tall));
      const title = document.createElementNS(SVG, "title");
      title.textContent = name + ": " + label(value);
      bar.appendChild(title);
      svg.appendChild(bar);
    });
    const base = document.createElementNS(SVG, "line");
    base.setAttribute("class", "base");
    base.setAttribute("x1", "0"); base.setAttribute("x2", String(width));
    base.setAttribute("y1", String(height - bottom)); base.setAttribute("y2", String(height - bottom));
    svg.appendChild(base);
    holder.appendChild(svg);
    const ticks = document.createElement("div");
    ticks.className = "ticks";
    [days[0], days[days.length - 1]].forEach(function (name) {
      const tick = document.createElement("span");
      tick.textContent = name;
      ticks.appendChild(tick);
    });
    holder.appendChild(ticks);
  }

  function groupBars(id, groups, name, currency) {
    const list = document.getElementById(id);
    list.replaceChildren();
    const most = Math.max(0, ...groups.map((group) => Number(group.charge)));
    groups.forEach(function (group) {
      const item = document.createElement("li");
      const label = document.createElement("span");
      label.className = "name";
      label.textContent = group[name];
      const value = document.createElement("span");
      value.className = "value";
      value.textContent = money(group.charge, currency) + " · " + calls(group.calls);
      value.dataset.exact = group.charge;
      const track = document.createElement("span");
      track.className = "track";
      const fill = document.createElement("span");
      fill.className = "fill";
      fill.style.width = (most > 0 ? (Number(group.charge) / most) * 100 : 0) + "%";
      track.appendChild(fill);
      item.append(label, value, track);
      list.appendChild(item);
    });
  }

  function lines(usage) {
    const body = document.querySelector("#lines tbody");
    body.replaceChildren();
    usage.lines.forEach(function (line) {
      const row = document.createElement("tr");
      [line.day, line.feature, line.model, count(line.calls), count(line.tokens), money(line.charge, usage.currency)].forEach(
        function (text, index) {
          const cell = document.createElement("td");
          cell.textContent = text;
          if (index >= 3) cell.className = "num";
          row.appendChild(cell);
        },
      );
      body.appendChild(row);
    });
  }

  function show(usage, period) {
    setText("customer", usage.customer_id);
    setText("range", usage.from + " – " + usage.to);
    const charge = document.getElementById("total-charge");
    charge.textContent = money(usage.totals.charge, usage.currency);
    charge.dataset.exact = usage.totals.charge;
    charge.dataset.currency = usage.currency || "";
    setText("total-calls", count(usage.totals.calls));
    setText("total-tokens", count(usage.totals.tokens));
    const days = daysOf(period);
    const byDay = new Map(usage.days.map((entry) => [entry.day, entry]));
    barChart("chart-charge", days, days.map((name) => Number((byDay.get(name) || { charge: "0" }).charge)), "bar-charge",
      (value) => money(String(value), usage.currency));
    barChart("chart-calls", days, days.map((name) => (byDay.get(name) || { calls: 0 }).calls), "bar-calls",
      calls);
    groupBars("by-feature", usage.features, "feature", usage.currency);
    groupBars("by-model", usage.models, "model", usage.currency);
    lines(usage);
    document.getElementById("usage").hidden = false;
  }

  async function load(token) {
    const period = range(document.getElementById("period").value);
    status("Loading…", false);
    try {
      const usage = await fetchUsage(token, period);
      show(usage, period);
      status("", false);
    } catch (error) {
      document.getElementById("usage").hidden = true;
      status(error.status === 401 ? "This link has expired or was revoked: ask for a new one." : error.message, true);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    const token = tokenFromFragment();
    if (!token) {
      status("This link has no access token: open the link you were given.", true);
      return;
    }
    document.getElementById("period").addEventListener("change", function () { load(token); });
    load(token);
  });
})();
