// Commands: a verb's button where the session may send it, the confirmation naming its rule, then the envelope
// signed with this browser's key and posted for the floor to relay.

import { $, api, el, resendUpTo, state } from "./page.js";
import { canonical, envelope } from "./signing.js";

// target: "table" or "link"; a link's verbs are its own (the link judges them, link/commands.py).
export function actionButton(target, targetId, verb, args, label) {
  if (!state.session) return null;
  const mine = target === "link" ? state.session.link_allowed : state.session.allowed;
  if (!(mine || []).includes(verb)) return null;
  const b = el("button", { "data-verb": verb, "data-target": target }, label || verb.replaceAll("_", " "));
  b.addEventListener("click", (ev) => { ev.stopPropagation(); confirmAndSend(targetId, verb, args, target); });
  return b;
}

// -- actions -------------------------------------------------------------------------------------------------------

let pending = null;

export function cancelPending() {
  pending = null;
  $("confirm").close();
}

export function confirmAndSend(tableId, verb, args, target) {
  const link = target === "link";
  const v = (link ? state.linkVerbs : state.verbs)[verb] || { confirm: verb, rule: "" };
  pending = { tableId, verb, args, link };
  $("confirm-text").textContent = `${v.confirm} ${link ? "on link" : "at table"} ${tableId}?`;
  $("confirm-rule").textContent = v.rule;
  $("confirm-args").textContent = Object.keys(args).length ? "with " + canonical(args) : "";
  $("confirm").showModal();
}

// Every open gap of every table, a resend each (its first MAX_SEQS seqs, as the gap's own button asks): confirmed once
// here, then each envelope signed in this browser with its key for its own table, which judges it (the floor holds
// no key and asks nothing itself: docs/console.md, "Resend every gap").
export function gapResends() {
  const asks = [];
  for (const t of [...state.tiles.values()].sort((x, y) => (x.table_id < y.table_id ? -1 : 1)))
    for (const [a, b] of t.gaps || []) asks.push({ tableId: t.table_id, args: { from_seq: a, to_seq: resendUpTo(a, b) } });
  return asks;
}

export function confirmResendAll() {
  const asks = gapResends();
  if (!asks.length) return;
  const v = state.verbs.resend || { confirm: "resend", rule: "" };
  pending = { many: asks, verb: "resend" };
  const tables = new Set(asks.map((x) => x.tableId)).size;
  $("confirm-text").textContent = `${v.confirm}: every open seq gap, ${asks.length} gap(s) at ${tables} table(s)?`;
  $("confirm-rule").textContent = v.rule;
  $("confirm-args").textContent = asks.map((x) => `${x.tableId} ${x.args.from_seq}-${x.args.to_seq}`).join(", ");
  $("confirm").showModal();
}

async function sendMany(p) {
  const said = [];
  let all = true;
  for (const x of p.many) {
    try {
      const env = await envelope(x.tableId, p.verb, x.args);
      const reply = await api("POST", `/api/tables/${encodeURIComponent(x.tableId)}/commands/${p.verb}`, undefined,
        JSON.stringify(env));
      all = all && reply.outcome === "applied";
      said.push(`${p.verb} ${x.args.from_seq}-${x.args.to_seq} at ${x.tableId}: ${reply.outcome}` +
        (reply.reason ? ` — ${reply.reason}` : ""));
    } catch (err) {
      all = false;
      said.push(`${p.verb} ${x.args.from_seq}-${x.args.to_seq} at ${x.tableId} not sent: ${err.message}`);
    }
    $("reply").textContent = said.join("\n");
  }
  $("reply").setAttribute("data-outcome", all ? "applied" : "error");
}

export async function sendPending() {
  const p = pending;
  pending = null;
  $("confirm").close();
  if (!p) return;
  if (p.many) {
    $("reply-panel").hidden = false;
    $("reply").textContent = `sending ${p.many.length} resend(s)…`;
    $("reply").removeAttribute("data-outcome");
    await sendMany(p);
    return;
  }
  $("reply-panel").hidden = false;
  $("reply").textContent = `sending ${p.verb} to ${p.tableId}…`;
  try {
    const env = await envelope(p.tableId, p.verb, p.args);
    const where = p.link ? "links" : "tables";
    const reply = await api("POST", `/api/${where}/${encodeURIComponent(p.tableId)}/commands/${p.verb}`, undefined,
      JSON.stringify(env));
    $("reply").textContent = `${p.verb} at ${p.tableId}: ${reply.outcome}` +
      (reply.reason ? ` — ${reply.reason}` : "") + "\n" + JSON.stringify(reply, null, 1);
    $("reply").setAttribute("data-outcome", reply.outcome);
  } catch (err) {
    $("reply").textContent = `${p.verb} at ${p.tableId} not sent: ${err.message}`;
    $("reply").setAttribute("data-outcome", "error");
  }
}
