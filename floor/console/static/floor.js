// The floor: a tile per table grouped by pit, the alerts that need a person, the linked progressives' panels.

import { actionButton, gapResends } from "./commands.js";
import { $, api, dollars, el, since, state } from "./page.js";
import { openTable } from "./table.js";

// "1 round", "3 rounds": a count as a supervisor reads it.
const count = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// The last finished round: its number, wagered, paid out and result in dollars as the floor wrote them (controller.
// core.money.fmt), and each seat's hand as its settlement named it; a round still in play is not shown.
function lastRound(r) {
  if (!r) return null;
  return el("div", { class: "last-round", "data-round": r.round_id, "data-outcome": r.outcome },
    el("div", { class: "summary" }, `last ${r.summary}`),
    r.hands.length ? el("div", { class: "hands" }, r.hands.join("; ")) : null);
}

function tile(t) {
  const faults = Object.keys(t.faults).length;
  const jackpots = Object.entries(t.pending_jackpots);
  const tilts = Object.keys(t.tilts);
  const noMethod = t.no_method !== null && t.no_method !== undefined;  // null while a method is usable
  // An offline or lost table reports nothing: its tile says since when, where it stopped and that its devices are
  // not heard, not the phase's age counting on and "devices ok" as if it played.
  const gone = t.state === "offline" || t.state === "lost";
  const devices = gone
    ? el("span", { class: "devices" }, el("span", { class: "dot unknown" }), `devices not heard: table ${t.state}`)
    : el("span", { class: "devices" }, el("span", { class: "dot " + (faults ? "bad" : "") }),
      faults ? `${faults} device(s) need attention` : "devices ok");
  const age = gone ? t.state_since : t.phase_since;
  const meters = Object.entries(t.meters).map(([lvl, m]) => `${lvl} ${dollars(m.display_cents)}`).join(" · ");
  const linked = Object.entries(t.linked_meters || {}).map(([lvl, m]) => `${lvl} ${dollars(m.display_cents)}`)
    .join(" · ");
  const links = (t.links || []).map((l) => el("div", { class: "link " + (l.healthy ? "ok" : "bad"),
    "data-link": l.link_id, "data-status": l.status, "data-leased": String(l.leased) },
    el("span", { class: "dot " + (l.healthy ? "" : "bad") }),
    `link ${l.link_id} ${l.status}` + (l.database === "down" ? ", database down" : "") +
    (l.leased ? ", leased" : ", no lease: linked wagers locked out")));
  const marked = Object.keys(t.out_of_order || {}).sort();
  const alerting = jackpots.length || tilts.length || (t.linked_jackpots || []).length;
  const node = el("div", { class: `tile ${t.state}` + (alerting ? " alerting" : ""),
    "data-table": t.table_id },
    el("div", { class: "row" }, el("span", { class: "name" }, t.table_id), el("span", { class: "state" }, t.state)),
    t.reason ? el("div", { class: "reason" }, t.reason) : null,
    el("div", { class: "game" }, `${t.game || "?"} (${t.chapter || "?"})`),
    el("div", { class: "row" }, el("span", { class: "phase", "data-phase": t.phase },
      gone ? `last heard in ${t.phase}` : t.phase),
      el("span", { class: "in-phase", "data-since": age || "", "data-prefix": gone ? `${t.state} ` : "" },
        (gone ? `${t.state} ` : "") + since(age))),
    el("div", { class: "row" }, el("span", { class: "players" }, count(t.players, "player")),
      el("span", { class: "rph" }, `${t.rounds_per_hour} rounds/h`)),
    el("div", { class: "row" }, el("span", { class: "rounds" }, count(t.rounds_completed, "round")),
      el("span", { class: "method", "data-usable": String(!noMethod) },
        [noMethod ? "none usable" : t.dealing_method, t.shuffle].filter(Boolean).join(", "))),
    // Each device marked out of order (655a.13(g)), at a glance; the table page says what took over.
    marked.length ? el("div", { class: "out-of-order", "data-devices": marked.join(" ") },
      `${marked.join(", ")} out of order`) : null,
    // A close waiting for the round in play, also after the table's restart (its table.recovered says it).
    t.closing ? el("div", { class: "closing" }, t.closing) : null,
    // No dealing method usable (655a.13(g)): the table deals no round until the shuffler or shoe is back in service.
    noMethod ? el("div", { class: "no-method", "data-block": "no_method" },
      `no_method: ${t.no_method || "no round is dealt until the shuffler or shoe is back in service"}`) : null,
    devices,
    lastRound(t.last_round),
    meters ? el("div", { class: "meters" }, meters) : null,
    ...links,
    linked ? el("div", { class: "linked-meters" }, linked) : null,
    ...(t.linked_jackpots || []).map((h) => el("div", { class: "jackpot linked", "data-link": h.link_id,
      "data-order": h.order }, `LINKED JACKPOT pending: ${h.table_id} seat ${h.seat} ${h.level} ` +
      `${dollars(h.amount_cents)} (${h.link_id} win #${h.order})`)),
    ...jackpots.map(([hit, j]) => el("div", { class: "jackpot", "data-hit": hit },
      `JACKPOT pending: seat ${j.seat} ${j.level} ${dollars(j.amount)}`)),
    ...tilts.map((k) => el("div", { class: "tilt" }, `TILT ${k}`)),
    t.gaps.length ? el("div", { class: "tilt" }, (t.stale_gaps || []).length ? "stale seq gap: resend" : "seq gap") : null);
  node.addEventListener("click", () => openTable(t.table_id));
  return node;
}

function pitBox(pit) {
  let box = document.querySelector(`#floor .pit[data-pit="${CSS.escape(pit)}"] .tiles`);
  if (box) return box;
  const node = el("div", { class: "pit", "data-pit": pit }, el("h2", {}, `Pit ${pit}`), el("div", { class: "tiles" }));
  const after = [...$("floor").children].find((p) => p.getAttribute("data-pit") > pit);
  $("floor").insertBefore(node, after || null);
  return node.querySelector(".tiles");
}

export function renderFloor() {
  $("floor").replaceChildren();
  for (const t of [...state.tiles.values()].sort((a, b) => a.table_id.localeCompare(b.table_id))) patchTile(t);
}

// One tile drawn again in its place; a new table's tile goes into its pit in table order.
export function patchTile(t) {
  const node = tile(t);
  const old = document.querySelector(`#floor .tile[data-table="${CSS.escape(t.table_id)}"]`);
  if (old && old.parentElement.parentElement.getAttribute("data-pit") === t.pit) { old.replaceWith(node); return; }
  if (old) old.remove();
  const box = pitBox(t.pit);
  const after = [...box.children].find((x) => x.getAttribute("data-table") > t.table_id);
  box.insertBefore(node, after || null);
}

// Sorted the way the server sorts them (floor/console/views.py sort_alerts): jackpots first, then oldest first.
function alertOrder(a, b) {
  const k = (x) => [x.rank, String(x.since), x.table_id, x.kind, String(x.key)];
  const [p, q] = [k(a), k(b)];
  for (let i = 0; i < p.length; i++) if (p[i] !== q[i]) return p[i] < q[i] ? -1 : 1;
  return 0;
}

export function renderAlerts() {
  const all = [...state.alertGroups.values()].flat().sort(alertOrder);
  $("alert-count").textContent = `(${all.length})`;
  // One action for every open gap (after a lost broker session, one at every table): where the session may resend.
  $("resend-all").hidden = !gapResends().length || !((state.session && state.session.allowed) || []).includes("resend");
  $("alerts").replaceChildren(...all.map((a) =>
    el("li", { class: "alert" + (a.ack ? " acknowledged" : ""), "data-kind": a.kind, "data-table": a.table_id,
      "data-key": a.key, "data-target": a.target, "data-target-id": a.target_id },
      el("strong", {}, a.table_id), el("span", {}, a.text), el("span", { class: "since", "data-since": a.since || "" }, since(a.since)),
      a.verb ? actionButton(a.target || "table", a.target_id || a.table_id, a.verb, a.args) : null,
      a.kind === "session" ? sessionAck(a) : null)));
}

// The lost broker session's alert: who acknowledged it and when, or a supervisor's button to say it has been seen
// (not a table's command: nothing is signed; the floor keeps who and when in console_audit, docs/console.md).
function sessionAck(a) {
  if (a.ack) return el("span", { class: "ack", "data-by": a.ack.by }, `acknowledged by ${a.ack.by} at ${a.ack.at}`);
  if (!state.session || state.session.role !== "supervisor") return null;
  const b = el("button", { "data-verb": "acknowledge_session" }, "acknowledge");
  b.addEventListener("click", async (ev) => {
    ev.stopPropagation();
    b.disabled = true;
    $("reply-panel").hidden = false;
    try {
      const r = await api("POST", "/api/floor/session/acknowledge", { since: a.key });
      $("reply").textContent = `lost session acknowledged by ${r.acknowledged.by} at ${r.acknowledged.at}`;
      $("reply").setAttribute("data-outcome", "acknowledged");
    } catch (err) {
      $("reply").textContent = `not acknowledged: ${err.message}`;
      $("reply").setAttribute("data-outcome", "error");
      b.disabled = false;
    }
  });
  return b;
}

// The floor's refused messages: how many, and the latest's topic, reason and time. The topic and reason are whatever
// a publisher sent (attacker-controlled): they go in as text only.
export function renderRefused() {
  const r = state.refused;
  $("refused-panel").hidden = !(r && r.count) || !(state.session && state.session.logged_in);
  if (!r) return;
  $("refused-count").textContent = `(${r.count})`;
  $("refused-topic").textContent = r.last_topic || "";
  $("refused-reason").textContent = r.last_reason || "";
  $("refused-when").setAttribute("data-since", r.last_at || "");
  $("refused-when").textContent = r.last_at ? `${since(r.last_at)} ago (${r.last_at})` : "";
}

// What the link refused (its state's refusals): how many, by kind, and the latest's kind, time, topic and reason. The
// topic and reason are a publisher's words (escaped by the floor, floor/links.py): set as text, never as markup.
function linkRefused(r) {
  if (!r || !r.total) return null;
  const by = Object.entries(r.counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k, n]) => `${k} ${n}`);
  return el("div", { class: "link-refused", "data-total": r.total },
    el("strong", { class: "link-refused-count" }, `${r.total} refused`), ` (${by.join(", ")}); latest `,
    el("span", { class: "link-refused-kind" }, r.last_kind || ""),
    r.last_at ? ` at ${r.last_at} ` : " ", el("code", { class: "link-refused-topic" }, r.last_topic || ""), " ",
    el("span", { class: "link-refused-reason" }, r.last_reason || ""));
}

export function renderLinks() {
  $("links").hidden = !state.links.size || !(state.session && state.session.logged_in);
  $("link-panels").replaceChildren(...[...state.links.values()].map((l) => {
    const healthy = l.status === "open" && l.database === "up";
    return el("div", { class: "link-panel " + (healthy ? "ok" : "bad"), "data-link": l.link_id },
      el("div", { class: "row" }, el("strong", {}, `Link ${l.link_id}`),
        el("span", { class: "link-status", "data-status": l.status }, l.status + (l.tilt ? `: ${l.tilt}` : "")),
        el("span", {}, `database ${l.database || "?"}`), el("span", {}, `seq ${l.seq}`)),
      el("ul", { class: "link-levels" }, ...Object.entries(l.meters).sort().map(([lvl, m]) =>
        el("li", { "data-level": lvl }, el("span", {}, lvl), el("strong", {}, dollars(m.display_cents))))),
      el("table", { class: "link-tables" }, el("tbody", {}, ...Object.entries(l.tables).sort().map(([tid, x]) =>
        el("tr", { "data-table": tid, "data-leased": String(x.leased) }, el("td", {}, tid),
          el("td", {}, `asset ${x.asset_number}`), el("td", {}, x.leased ? "leased" : "no lease"),
          el("td", { class: "heard", "data-since": x.last_seen || "" },
            x.last_seen ? `heard ${since(x.last_seen)} ago` : "not heard"))))),
      linkRefused(l.refusals),
      ...l.pending.map((h) => el("div", { class: "jackpot", "data-order": h.order },
        `pending: ${h.table_id} seat ${h.seat} ${h.level} ${dollars(h.amount_cents)} (win #${h.order})` +
        (h.meter_after_cents == null ? "" : `, meter after ${dollars(h.meter_after_cents)}`))),
      // Only the verb the link would take in its state (link/commands.py): open_link when closed, close_link when
      // open; a tilted link's clear_tilt is its alert's button; an offline link takes none.
      el("div", { class: "link-actions" },
        l.status === "closed" ? actionButton("link", l.link_id, "open_link", { note: "opened from the floor console" }) : null,
        l.status === "open" ? actionButton("link", l.link_id, "close_link", { note: "closed from the floor console" }) : null));
  }));
}

// Every age on the floor counts on between updates: a held jackpot publishes nothing more, and its alert's age drawn
// once would stand still beside the tile's count of the same hold.
setInterval(() => {
  for (const s of document.querySelectorAll(".in-phase, #alerts .since")) {
    s.textContent = (s.getAttribute("data-prefix") || "") + since(s.getAttribute("data-since"));
  }
  for (const s of document.querySelectorAll("#link-panels .heard[data-since]")) {
    if (s.getAttribute("data-since")) s.textContent = `heard ${since(s.getAttribute("data-since"))} ago`;
  }
  const r = $("refused-when");
  if (r && r.getAttribute("data-since")) {
    r.textContent = `${since(r.getAttribute("data-since"))} ago (${r.getAttribute("data-since")})`;
  }
}, 1000);
