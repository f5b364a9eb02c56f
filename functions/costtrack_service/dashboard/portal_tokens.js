// costtrack dashboard: the customers' portal links (docs/guides/portal.md), on the Customers view.
// Loaded after app.js, whose helpers it uses ($, api, el, tableRow, emptyRow, ApiError, failed).
// A new link's token is shown once, inside the embed snippet to copy; the list shows prefixes.
"use strict";

function portalSnippet(url) {
  // The snippet is text for the owner to paste into their own page; it is never parsed here.
  const quoted = url.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
  return `<iframe src="${quoted}" title="Your usage" width="100%" height="900" style="border:0"></iframe>`;
}

async function loadPortalTokens() {
  const listed = await api("/v1/workspace/portal-tokens");
  const body = $("portal-tokens").tBodies[0];
  body.replaceChildren(...listed.tokens.slice().reverse().map((token) => {
    const action = el("td");
    if (token.status === "active") {
      const revoke = el("button", "Revoke", "small");
      revoke.type = "button";
      revoke.addEventListener("click", () => revokePortalToken(token.token_prefix, revoke));
      action.append(revoke);
    }
    return tableRow(el("td", token.token_prefix), el("td", token.customer_id), el("td", token.expires_at),
      el("td", token.status), action);
  }));
  if (!listed.tokens.length) body.append(emptyRow(5, "No portal links yet."));
}

async function createPortalToken(event) {
  event.preventDefault();
  const button = $("portal-create");
  button.disabled = true;
  $("portal-result").textContent = "";
  try {
    const customer = $("portal-customer").value.trim();
    const created = await api(`/v1/workspace/customers/${encodeURIComponent(customer)}/portal-tokens`, {
      method: "POST",
      body: JSON.stringify({ ttl_seconds: Number($("portal-ttl").value) }),
    });
    $("portal-snippet").value = portalSnippet(created.url);
    $("portal-link").value = created.url;
    $("portal-created").hidden = false;
    $("portal-result").textContent = `Link for ${created.customer_id} until ${created.expires_at}: shown once, copy it now.`;
    await loadPortalTokens();
  } catch (error) {
    if (error instanceof ApiError && error.status !== 401) {
      $("portal-result").textContent = `Could not create the link: ${error.message}`;
    } else {
      failed(error);
    }
  } finally {
    button.disabled = false;
  }
}

async function revokePortalToken(prefix, button) {
  button.disabled = true;
  try {
    await api(`/v1/workspace/portal-tokens/${encodeURIComponent(prefix)}`, { method: "DELETE" });
    $("portal-result").textContent = `Revoked ${prefix}.`;
    await loadPortalTokens();
  } catch (error) {
    button.disabled = false;
    failed(error);
  }
}

async function copyPortalSnippet() {
  const snippet = $("portal-snippet");
  try {
    await navigator.clipboard.writeText(snippet.value);
    $("portal-result").textContent = "Snippet copied.";
  } catch (error) {
    snippet.select(); // no clipboard access (an insecure origin): selected for the reader to copy
    $("portal-result").textContent = "Select and copy the snippet.";
  }
}

$("portal-form").addEventListener("submit", createPortalToken);
$("portal-copy").addEventListener("click", copyPortalSnippet);
