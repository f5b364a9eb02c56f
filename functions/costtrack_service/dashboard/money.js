// costtrack dashboard: the one way the page shows money and counts. Loaded first; app.js,
// charts.js, events.js and budgets.js use formatMoney for every amount, chart axes included.
"use strict";

// Costs arrive as exact decimal strings ("0.00063", "12345.678901234"). Intl.NumberFormat reads
// a string as an exact decimal (never through a float), so "$12,345.68" is rounded from the
// string itself. A dollar or more shows cents; less than a dollar its first three significant
// digits, and at least cents ("$0.10", "$0.0335", "$0.00063", "$0.0000001"): per-call costs are
// small, so they keep their digits. Never an exponent, never "$0.00" for a cost.
const MONEY = new Intl.NumberFormat("en-US", {
  style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2,
});
const SMALL_MONEY = new Intl.NumberFormat("en-US", {
  style: "currency", currency: "USD", minimumSignificantDigits: 1, maximumSignificantDigits: 3,
});
const COUNT = new Intl.NumberFormat("en-US");
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

// `value`: a decimal string from the API, or a number (a chart's axis); null/undefined is $0.00.
function formatMoney(value) {
  if (value === null || value === undefined || value === "") return MONEY.format(0);
  const text = typeof value === "number" ? (Number.isFinite(value) ? value.toString() : "0") : String(value).trim();
  if (!DECIMAL.test(text)) return text;  // never shown by the API; show it rather than NaN
  const size = Math.abs(Number(text));
  if (size === 0 || size >= 1) return MONEY.format(text);
  const small = SMALL_MONEY.format(text);
  const fraction = small.split(".")[1] || "";
  return fraction.length >= 2 ? small : MONEY.format(text);  // "$0.1" -> "$0.10", "$1" -> "$1.00"
}

function formatCount(value) {
  return COUNT.format(Number(value ?? 0));
}
