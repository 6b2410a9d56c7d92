// The live feed: the floor's server-sent events, folded into the page's state and drawn.

import { patchTile, renderAlerts, renderFloor, renderLinks, renderRefused } from "./floor.js";
import { $, heard, state } from "./page.js";
import { appendLine, openTable, renderNow, roundFinished } from "./table.js";

let source = null;
let retry = null; // while a refused stream waits to try again: its timer and countdown

function show(text, up, why) {
  const lost = up && state.brokerLost;
  $("conn").textContent = lost ? "live, but the floor has lost its broker" : text;
  $("conn").className = up && !lost ? "conn up" : "conn down";
  const said = lost ? `Tables are shown as last heard: the floor cannot reach its broker since ${
    String(state.brokerLost.since).slice(11, 19)} UTC (${state.brokerLost.error}); it keeps trying.` : why;
  $("conn-why").textContent = said || "";
  $("conn-why").hidden = !said;
}

// The floor itself may be cut from the tables while this page is live: its broker gone, every table's state is only
// as last heard (the broker's wills may call them all lost). Said beside the page's own link, with since when.
function brokerLost(lost) {
  state.brokerLost = lost || null;
  if (source && source.readyState === EventSource.OPEN) show("live", true);
}

function stopRetry() {
  if (retry) { clearTimeout(retry.timer); clearInterval(retry.tick); }
  retry = null;
}

export function disconnect() {
  if (source) source.close();
  source = null;
  stopRetry();
  show("not connected", false);
}

// An EventSource whose request is refused (not 200: a 429 past [console] streams_per_session or max_streams, a 401
// once the session ended) closes for good and its error event says nothing of why. So the page asks the same URL
// once with fetch, which sees the status, the server's reason and its Retry-After; shows them; and tries again then
// (docs/console.md, "Limits"). Were the stream allowed by then, the fetch is cut at once and the EventSource reopens.
async function refused(onBye) {
  const ctl = new AbortController();
  let r = null;
  try { r = await fetch("/api/stream", { credentials: "same-origin", signal: ctl.signal }); } catch { r = null; }
  if (r && r.status === 401) { disconnect(); onBye(); return; }
  if (r && r.ok) ctl.abort();
  const data = r && !r.ok ? await r.json().catch(() => ({})) : {};
  const why = !r ? "the console cannot be reached" : r.ok ? "" : `${data.error || "HTTP " + r.status} (HTTP ${r.status})`;
  const wait = Math.max(1, Number.parseInt((r && r.headers.get("Retry-After")) || "", 10) || (r && r.ok ? 1 : 15));
  const until = Date.now() + wait * 1000;
  const tick = () => show(`not live: trying again in ${Math.max(0, Math.ceil((until - Date.now()) / 1000))} s`, false,
    why ? `The live stream was refused: ${why}` : "");
  stopRetry();
  tick();
  retry = { timer: setTimeout(() => { stopRetry(); connect(onBye); }, wait * 1000), tick: setInterval(tick, 1000) };
}

// onBye: what to do when the server ends the session (session.js asks it again), passed in so that this module
// need not import the one that imports it.
export function connect(onBye) {
  if (source || retry) return;
  const es = new EventSource("/api/stream");
  source = es;
  es.onopen = () => show("live", true);
  es.onerror = () => {
    if (es.readyState !== EventSource.CLOSED) { show("reconnecting", false); return; }
    if (source === es) { source = null; refused(onBye); }
  };
  // The whole floor once, at connection; then each update carries only the tiles, alert groups and link panels
  // that changed, and the page patches those in place (docs/console.md, "Updates").
  es.addEventListener("floor", (m) => {
    const f = JSON.parse(m.data);
    heard(f.now);
    state.tiles = new Map(f.tiles.map((t) => [t.table_id, t]));
    for (const t of f.tiles) state.tileCount.set(t.table_id, (state.tileCount.get(t.table_id) || 0) + 1);
    state.alertGroups = new Map();
    for (const a of f.alerts) {
      if (!state.alertGroups.has(a.group)) state.alertGroups.set(a.group, []);
      state.alertGroups.get(a.group).push(a);
    }
    state.links = new Map((f.links || []).map((l) => [l.link_id, l]));
    state.refused = f.refused || null;
    brokerLost(f.broker_lost);
    renderFloor();
    renderAlerts();
    renderLinks();
    renderRefused();
    // After a reconnect the open view is loaded again: the log lines and rounds the updates missed while away
    // carried are in the console's answer (and the tile, newer than the answer's, is kept: openTable).
    if (state.open) openTable(state.open);
  });
  es.addEventListener("update", (m) => {
    const u = JSON.parse(m.data);
    heard(u.now);
    for (const t of u.tiles) {
      state.tiles.set(t.table_id, t);
      state.tileCount.set(t.table_id, (state.tileCount.get(t.table_id) || 0) + 1);
      patchTile(t);
    }
    const groups = Object.entries(u.alerts || {});
    for (const [g, list] of groups) { if (list.length) state.alertGroups.set(g, list); else state.alertGroups.delete(g); }
    if (groups.length) renderAlerts();
    for (const l of u.links || []) state.links.set(l.link_id, l);
    if ((u.links || []).length) renderLinks();
    if (u.refused) { state.refused = u.refused; renderRefused(); }
    if ("broker_lost" in u) brokerLost(u.broker_lost);
    if (state.open) {
      for (const line of u.lines) if (line.table_id === state.open) { appendLine(line); roundFinished(line); }
      const t = state.tiles.get(state.open);
      if (t && u.tiles.some((x) => x.table_id === state.open)) renderNow(t);
    }
  });
  es.addEventListener("heartbeat", (m) => heard(JSON.parse(m.data).now));
  es.addEventListener("bye", () => { disconnect(); onBye(); });
}
