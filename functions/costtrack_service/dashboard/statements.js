// costtrack dashboard: the "Monthly statements" download. Loaded after app.js, whose helpers it
// uses ($, TOKEN_KEY, ApiError, status, failed). The statement is fetched with the admin token
// (a plain link could not carry it) and handed to the browser as a file through a blob URL.
"use strict";

function currentMonth() {
  return new Date().toISOString().slice(0, 7); // UTC, as statements are
}

function statementFilename(response, month, by, format) {
  const match = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  return match ? match[1] : `costtrack-${month}-by-${by}.${format}`;
}

async function downloadStatement(event) {
  event.preventDefault();
  const month = $("statement-month").value;
  const by = $("statement-by").value;
  const format = $("statement-format").value;
  const button = $("statement-download");
  button.disabled = true;
  $("statement-result").textContent = "";
  try {
    const query = new URLSearchParams({ by, format });
    const response = await fetch(`/v1/workspace/statements/${encodeURIComponent(month)}?${query}`, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` },
    });
    if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
    const blob = await response.blob();
    const name = statementFilename(response, month, by, format);
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 0);
    $("statement-result").textContent = `Downloaded ${name}.`;
  } catch (error) {
    if (error instanceof ApiError && error.status !== 401) {
      $("statement-result").textContent = `Could not make the statement: ${error.message}`;
    } else {
      failed(error);
    }
  } finally {
    button.disabled = false;
  }
}

$("statement-month").value = currentMonth();
$("statement-month").max = currentMonth();
$("statement-form").addEventListener("submit", downloadStatement);
