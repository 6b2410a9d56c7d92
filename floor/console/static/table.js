// One table's view: its live log, what it is doing now, its actions, devices, software and recent rounds.

import { confirmAndSend } from "./commands.js";
import { $, api, dollars, el, heard, resendUpTo, since, state } from "./page.js";

function logItem(l) {
  return el("li", { "data-seq": l.seq, "data-type": l.type }, el("span", {}, l.seq), el("span", {}, l.ts.slice(11, 19)),
    el("span", {}, l.type), el("span", l.bad ? { class: "bad", title: l.bad } : {}, l.text), el("span", { class: "rule" }, l.rule ? `[${l.rule}]` : ""));
}

// While the open table's view waits for its answer: the lines the live stream brought, drawn again after the answer's.
let arrived = null;

export function appendLine(l) {
  if (arrived) arrived.push(l);
  const log = $("tv-log");
  log.append(logItem(l));
  while (log.children.length > 300) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

// Each device marked out of order (655a.13(g)) and what took over it, in name order.
function marksText(marks) {
  return Object.entries(marks || {}).sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([d, took]) => (took ? `${d} (${took} took over)` : d)).join("; ");
}

export function renderNow(t) {
  const rows = [["state", t.state], ["reason", t.reason || "-"], ["phase", el("span", {}, `${t.phase} for `,
    el("span", { class: "in-phase", "data-since": t.phase_since || "" }, since(t.phase_since)))], ["round", t.round_id || "-"],
    ["dealing method", t.no_method != null ? "none usable (no_method)" : t.dealing_method || "-"], ["shuffle", t.shuffle || "-"],
    ["out of order", marksText(t.out_of_order) || "none"], ["round in play",
      t.this_round ? `${t.this_round.round_id}: ${t.this_round.text}` : "-"],
    ["closing", t.closing || "-"], ["players", t.players],
    ["open tilts", Object.keys(t.tilts).join(", ") || "none"], ["blocks", Object.keys(t.blocks).join(", ") || "none"],
    ["links", (t.links || []).map((l) => `${l.link_id} ${l.status}, ${l.leased ? "leased" : "no lease"}`)
      .join("; ") || "none"]];
  $("tv-now").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-field": k }, v)]));
  $("tv-meters").replaceChildren(...Object.entries(t.meters).map(([lvl, m]) =>
    el("li", { "data-level": lvl }, `${lvl}: ${dollars(m.display_cents)} (reserve ${dollars(m.reserve_cents)}, hits ${m.hits})`)));
  renderActions(t);
  renderDevices(t);
}

// The open table's devices as its birth names them (model, serial, firmware), kept for each tile drawn after.
let identities = new Map();

function renderDevices(t) {
  const names = new Set([...identities.keys(), ...Object.keys(t.devices)]);
  $("tv-devices").tBodies[0].replaceChildren(...[...names].sort().map((n) => {
    const id = identities.get(n) || {};
    const st = (t.devices[n] || {}).state || "unknown";
    return el("tr", { "data-device": n }, el("td", {}, n), el("td", {}, st), el("td", {}, id.model || "-"),
      el("td", {}, id.serial || "-"), el("td", {}, id.firmware || "-"));
  }));
}

function field(name, options) {
  if (options) return el("select", { name }, ...options.map((o) => el("option", { value: o }, o)));
  return el("input", { name, placeholder: name });
}

function renderActions(t) {
  const box = $("tv-actions");
  const forms = [];
  const add = (verb, inputs, argsOf) => {
    if (!(state.session.allowed || []).includes(verb)) return;
    const b = el("button", { "data-verb": verb }, verb.replaceAll("_", " "));
    const row = el("div", { class: "action" }, ...inputs, b);
    b.addEventListener("click", () => confirmAndSend(t.table_id, verb, argsOf(inputs)));
    forms.push(row);
  };
  const tilts = Object.keys(t.tilts);
  for (const [hit, j] of Object.entries(t.pending_jackpots))
    add("validate_jackpot", [], () => ({ seat: j.seat, level: j.level, hit }));
  if (tilts.length) {
    add("acknowledge_tilt", [field("tilt", tilts)], ([s]) => ({ tilt: s.value }));
    add("clear_tilt", [field("tilt", tilts)], ([s]) => ({ tilt: s.value }));
  }
  add("mark_out_of_order", [field("device", ["shuffler", "shoe"])], ([s]) => ({ device: s.value }));
  add("back_in_service", [field("device", ["shuffler", "shoe"])], ([s]) => ({ device: s.value }));
  add("verify_deck", [], () => ({}));
  add("verify_inspection", [], () => ({}));
  add("floorperson_decision", [field("about", ["chip_count", "shuffle_order"]),
    field("decision", ["proceed", "recount", "void", "reshuffle"])], ([a, d]) => ({ about: a.value, decision: d.value }));
  add("bind_player", [field("seats")], ([s]) => ({ seats: s.value.split(/[ ,]+/).filter(Boolean).map(Number) }));
  add("player_left", [field("seat")], ([s]) => ({ seat: Number(s.value) }));
  add("release_held", [field("seat"), field("to", ["player", "house"])], ([s, t]) => ({ seat: Number(s.value), to: t.value }));
  // 605a.7(a)(5): audited, between rounds; the table refuses it during a round (docs/commands.md).
  add("reset_meter", [field("level"), field("reason")], ([l, r]) => ({ level: l.value, reason: r.value }));
  // 605a.2(d)(1): on each seat's terminal, so a player whose terminal is out of order is paid by an attendant; the
  // table refuses it while the seat has a wager in the round in progress and for an empty account (docs/accounts.md).
  const terminal = "wager_terminal_";
  for (const [name, d] of Object.entries(t.devices).filter(([n]) => n.startsWith(terminal)).sort())
    add("cash_out_account", [el("span", { "data-seat": name.slice(terminal.length) },
      `seat ${name.slice(terminal.length)}: terminal ${d.state || "unknown"}`), field("reason")],
    ([, r]) => ({ seat: Number(name.slice(terminal.length)), reason: r.value }));
  // Signed here with this browser's key and relayed like any command: the floor holds no key (docs/floor.md).
  const stale = new Set((t.stale_gaps || []).map(([a, b]) => `${a}-${b}`));
  for (const [a, b] of t.gaps || []) // at most the floor's MAX_SEQS a command (docs/commands.md, resend)
    add("resend", [el("span", {}, `seq ${a}-${b}${stale.has(`${a}-${b}`) ? " (stale)" : ""}`)],
      () => ({ from_seq: a, to_seq: resendUpTo(a, b) }));
  // Only the verb the table would take in its phase (controller/engine/shuffling.py ignores the other): open_table
  // while closed, close_table while open and not closing already (its phase says so until the round goes on, the
  // tile's `closing` for as long as the close stands, a restart included). A phase not heard offers both.
  if (t.phase === "closed" || t.phase === "unknown") add("open_table", [], () => ({}));
  if (t.phase !== "closed" && t.phase !== "closing" && !t.closing) add("close_table", [], () => ({}));
  box.replaceChildren(...forms);
}

export async function openTable(tableId) {
  state.open = tableId;
  identities = new Map();
  arrived = [];
  $("table-view").hidden = false;
  $("floor").hidden = true;
  $("tv-title").textContent = tableId;
  const drawn = state.tileCount.get(tableId) || 0;
  $("tv-error").hidden = true;
  let d;
  try {
    d = await api("GET", `/api/tables/${encodeURIComponent(tableId)}`);
  } catch (err) {
    if (state.open !== tableId) return;
    arrived = null;
    $("tv-error").textContent = `The table's view could not be loaded: ${err.message}`;
    $("tv-error").hidden = false;
    return;
  }
  if (state.open !== tableId) return; // closed, or another table opened, while the answer was on its way
  heard(d.now);
  identities = new Map(d.devices.map((x) => [x.device_id, x.identity || {}]));
  // The answer's tile is the one of the moment the console took the request (it reads the archive's rounds after):
  // a tile the live stream brought meanwhile is newer and was drawn already; put back, the older one would stay
  // until the table next changes, which an idle table may not do for hours (a terminal shown online though offline).
  renderNow((state.tileCount.get(tableId) || 0) !== drawn && state.tiles.get(tableId) || d.tile);
  const last = d.lines.length ? d.lines[d.lines.length - 1].seq : -1;
  const later = arrived.filter((l) => l.seq > last);
  arrived = null;
  $("tv-log").replaceChildren(...d.lines.map(logItem));
  later.forEach(appendLine);
  $("tv-log").scrollTop = $("tv-log").scrollHeight;
  const sw = d.software || {};
  $("tv-software").textContent = sw.code_sha256 ? `tablectl ${sw.version}, code sha256 ${sw.code_sha256} over ` +
    `${sw.code_files} files; verdict: ${d.verdict || "none published"}` : "no birth message yet";
  $("tv-rounds").replaceChildren(...d.rounds.map(roundItem));
  for (const l of later) roundFinished(l); // finished while the view loaded: perhaps after the answer's rounds
}

const ROUNDS = 5; // the view's recent rounds, as many as the console's answer has (floor/console/server.py)

function roundItem(r) {
  return el("div", { class: "round", "data-round": r.round_id },
    el("strong", {}, `${r.round_id} ${r.outcome}`),
    r.table_result !== null ? ` table result ${dollars(r.table_result)}` : "",
    el("div", { class: "dealt-by" }, `dealt by ${r.dealing_method || "a method not on record"}` +
      // A table older than deal.started (or a round not dealt): its word by the round's end (floor/recall.py said_when)
      (r.dealt_by_said === "round end" ? " (as the table said it by the round's end: no deal.started on record)" : "") +
      `; out of order: ${marksText(r.out_of_order) || "none"}`),
    el("ul", {}, ...roundLines(r)));
}

// The round's settlements and, in seq order among them, what else befell it in words (floor/round_notes.py): a stop
// and the restart after it, a void, "no more bets" refused. A round recalled by an older console has no notes.
function roundLines(r) {
  const settled = r.settlements.map((s) => [s.seq ?? 0, el("li", { class: "settled", "data-type": s.type },
    `${s.type} seat ${s.seat ?? "-"}: ${(s.cards || []).join(" ")} ${s.hand || ""} ` +
    (s.wagers ? s.wagers.map((w) => `${w.wager} ${dollars(w.amount)} ${w.outcome} paid ${dollars(w.paid)}`).join("; ")
      : `${s.outcome || ""} paid ${dollars(s.paid)}`) + (s.rule ? ` [${s.rule}]` : ""))]);
  const noted = (r.notes || []).map((n) => [n.seq, el("li", { class: "note", "data-type": n.type },
    n.text + (n.rule ? ` [${n.rule}]` : ""))]);
  return [...settled, ...noted].sort((a, b) => a[0] - b[0]).map(([, li]) => li);
}

// A round of the open table finished (its round.completed or round.voided came on the stream): recalled from the
// archive, as the view's recent rounds are, and put first. The stream's update leaves after the batch's commit
// (docs/console.md, "Updates"), so the round is on record; a round drawn already is drawn again in its place.
export async function roundFinished(l) {
  if (arrived || (l.type !== "round.completed" && l.type !== "round.voided") || !l.round_id) return;
  const tableId = state.open;
  let r;
  try {
    r = await api("GET", `/api/rounds/${encodeURIComponent(l.round_id)}`);
  } catch (err) {
    if (state.open !== tableId) return;
    $("tv-error").textContent = `Round ${l.round_id} could not be recalled: ${err.message} (reopen the table to retry)`;
    $("tv-error").hidden = false;
    return;
  }
  if (state.open !== tableId || arrived) return; // closed, or opened again (its answer draws the rounds afresh)
  const box = $("tv-rounds");
  const old = [...box.children].find((x) => x.getAttribute("data-round") === r.round_id);
  if (old) { old.replaceWith(roundItem(r)); return; }
  box.prepend(roundItem(r));
  while (box.children.length > ROUNDS) box.lastChild.remove();
}

export function closeTable() {
  state.open = null;
  arrived = null;
  $("table-view").hidden = true;
  $("floor").hidden = false;
}
