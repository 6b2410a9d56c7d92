// The live feed: the floor's server-sent events, folded into the page's state and drawn.

import { patchTile, renderAlerts, renderFloor, renderLinks } from "./floor.js";
import { $, heard, state } from "./page.js";
import { appendLine, renderNow } from "./table.js";

let source = null;

export function disconnect() {
  if (source) source.close();
  source = null;
  $("conn").textContent = "not connected";
  $("conn").className = "conn down";
}

// onBye: what to do when the server ends the session (session.js asks it again), passed in so that this module
// need not import the one that imports it.
export function connect(onBye) {
  if (source) return;
  source = new EventSource("/api/stream");
  source.onopen = () => { $("conn").textContent = "live"; $("conn").className = "conn up"; };
  source.onerror = () => { $("conn").textContent = "reconnecting"; $("conn").className = "conn down"; };
  // The whole floor once, at connection; then each update carries only the tiles, alert groups and link panels
  // that changed, and the page patches those in place (docs/console.md, "Updates").
  source.addEventListener("floor", (m) => {
    const f = JSON.parse(m.data);
    heard(f.now);
    state.tiles = new Map(f.tiles.map((t) => [t.table_id, t]));
    state.alertGroups = new Map();
    for (const a of f.alerts) {
      if (!state.alertGroups.has(a.group)) state.alertGroups.set(a.group, []);
      state.alertGroups.get(a.group).push(a);
    }
    state.links = new Map((f.links || []).map((l) => [l.link_id, l]));
    renderFloor();
    renderAlerts();
    renderLinks();
  });
  source.addEventListener("update", (m) => {
    const u = JSON.parse(m.data);
    heard(u.now);
    for (const t of u.tiles) { state.tiles.set(t.table_id, t); patchTile(t); }
    const groups = Object.entries(u.alerts || {});
    for (const [g, list] of groups) { if (list.length) state.alertGroups.set(g, list); else state.alertGroups.delete(g); }
    if (groups.length) renderAlerts();
    for (const l of u.links || []) state.links.set(l.link_id, l);
    if ((u.links || []).length) renderLinks();
    if (state.open) {
      for (const line of u.lines) if (line.table_id === state.open) appendLine(line);
      const t = state.tiles.get(state.open);
      if (t && u.tiles.some((x) => x.table_id === state.open)) renderNow(t);
    }
  });
  source.addEventListener("heartbeat", (m) => heard(JSON.parse(m.data).now));
  source.addEventListener("bye", () => { disconnect(); onBye(); });
}
