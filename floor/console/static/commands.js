// Commands: a verb's button where the session may send it, the confirmation naming its rule, then the envelope
// signed with this browser's key and posted for the floor to relay.

import { $, api, el, state } from "./page.js";
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

export async function sendPending() {
  const p = pending;
  pending = null;
  $("confirm").close();
  if (!p) return;
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
