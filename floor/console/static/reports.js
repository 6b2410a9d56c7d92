// The Reports page: `tablectl report`'s shift, gaming-day and period reports (floor/console/reports.py), framed as
// the same HTML with its charts, and its CSV to download. A supervisor's; the live floor goes on meanwhile.

import { $, api, el, state } from "./page.js";
import { closeTable } from "./table.js";

let options = null; // the shifts, tables and games the console offers (GET /api/reports), read once

function query() {
  const kind = $("rp-kind").value;
  const q = new URLSearchParams();
  if (kind === "period") { q.set("from", $("rp-from").value); q.set("to", $("rp-to").value); }
  else q.set("day", $("rp-day").value);
  if (kind === "shift") q.set("shift", $("rp-shift").value);
  if ($("rp-table").value) q.set("table", $("rp-table").value);
  if ($("rp-game").value) q.set("game", $("rp-game").value);
  return q;
}

function showKind() {
  const kind = $("rp-kind").value;
  for (const l of document.querySelectorAll("#reports label[data-kinds]"))
    l.hidden = !l.getAttribute("data-kinds").split(" ").includes(kind);
}

function fill(id, values, all) {
  $(id).replaceChildren(...(all ? [el("option", { value: "" }, all)] : []),
    ...values.map((v) => el("option", { value: v }, v)));
}

// Checked first (the archive not asked), so that a mistake is said here, naming the fix; then framed. The frame is
// sandboxed: the report's page has no script, and gets none.
async function run() {
  const q = query();
  $("rp-error").hidden = true;
  $("rp-csv").hidden = true;
  try {
    const ok = await api("GET", `/api/reports/check?${q}`);
    $("rp-state").textContent = `Report ${ok.report}: made from the archive, it may take a moment.`;
  } catch (err) {
    $("rp-error").textContent = `The report cannot be made: ${err.message}`;
    $("rp-error").hidden = false;
    return;
  }
  $("rp-frame").hidden = false;
  $("rp-frame").src = `/api/reports/report?${q}&format=html`;
  $("rp-csv").href = `/api/reports/report?${q}&format=csv`;
  $("rp-csv").hidden = false;
}

export async function openReports() {
  closeTable();
  $("floor").hidden = true;
  $("reports").hidden = false;
  showKind();
  if (options) return;
  try {
    options = await api("GET", "/api/reports");
  } catch (err) {
    $("rp-error").textContent = `The report choices could not be read: ${err.message}`;
    $("rp-error").hidden = false;
    return;
  }
  fill("rp-shift", options.shifts, null);
  fill("rp-table", options.tables, "every table");
  fill("rp-game", options.games, "every game");
  if (!options.shifts.length) $("rp-kind").querySelector('option[value="shift"]').disabled = true;
}

export function closeReports() {
  $("reports").hidden = true;
  $("floor").hidden = !(state.session && state.session.logged_in);
}

export function wireReports() {
  $("reports-button").addEventListener("click", openReports);
  $("rp-close").addEventListener("click", closeReports);
  $("rp-kind").addEventListener("change", showKind);
  $("rp-run").addEventListener("click", run);
}
