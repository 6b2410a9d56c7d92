// The floor console in the browser (docs/console.md). Shipped as is: no build step, no library, nothing fetched
// from elsewhere. The supervisor's Ed25519 key is made here with WebCrypto as non-extractable and kept in
// IndexedDB; commands are signed here over the same canonical form `tablectl command send` signs
// (controller/supervisor/envelope.py) and the floor relays them untouched. Text from the server goes into the
// page as text only (textContent), never as markup.
"use strict";

const state = { session: null, tiles: new Map(), alertGroups: new Map(), links: new Map(), open: null, verbs: {},
  linkVerbs: {}, key: null, skew: 0 };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

const dollars = (cents) => "$" + (Number(cents || 0) / 100).toLocaleString("en-US", { minimumFractionDigits: 2 });

// -- the canonical form and signing ----------------------------------------------------------------------------

// JSON with keys sorted at every level and no spaces, as Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False): JSON.stringify escapes the same characters the same way.
function canonical(value) {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  }
  if (typeof value === "number" && !Number.isInteger(value)) throw new Error("only integers are signed");
  return JSON.stringify(value);
}

function b64(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s);
}

function hex(n) {
  const a = new Uint8Array(n);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sign(text) {
  return b64(await crypto.subtle.sign("Ed25519", state.key.privateKey, new TextEncoder().encode(text)));
}

// ISO 8601 in UTC with microseconds and Z, as iso_utc() writes issued_at.
function isoMicro(d) {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

async function envelope(tableId, verb, args) {
  const body = {
    command_id: hex(16),
    table_id: tableId,
    verb: verb,
    args: args,
    issued_at: isoMicro(new Date()),
    nonce: hex(16),
    key_id: state.key.key_id,
  };
  body.signature = await sign(canonical(body));
  return body;
}

// -- the key in IndexedDB ----------------------------------------------------------------------------------------

function db() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("tablectl-console", 1);
    r.onupgradeneeded = () => r.result.createObjectStore("keys");
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function loadKey() {
  const d = await db();
  return new Promise((resolve, reject) => {
    const r = d.transaction("keys").objectStore("keys").get("me");
    r.onsuccess = () => resolve(r.result || null);
    r.onerror = () => reject(r.error);
  });
}

async function saveKey(record) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction("keys", "readwrite");
    t.objectStore("keys").put(record, "me");
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
  });
}

// -- HTTP ----------------------------------------------------------------------------------------------------------

async function api(method, path, body, raw) {
  const headers = {};
  if (method !== "GET") headers["Content-Type"] = "application/json";
  if (state.session && state.session.csrf) headers["X-CSRF-Token"] = state.session.csrf;
  const r = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: raw !== undefined ? raw : body !== undefined ? JSON.stringify(body) : undefined,
  });
  const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok && !(r.status === 504 && data.outcome)) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}

// -- enrolment and log-in ------------------------------------------------------------------------------------------

async function enrol() {
  $("key-error").textContent = "";
  try {
    const keyId = $("enrol-key-id").value.trim();
    const role = $("enrol-role").value;
    // Non-extractable: exportKey refuses the private half; the public half is always exportable.
    const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
    const publicKey = b64(await crypto.subtle.exportKey("raw", pair.publicKey));
    const reply = await api("POST", "/api/enrol", { key_id: keyId, role: role, public_key: publicKey });
    state.key = { key_id: keyId, role: role, publicKey: publicKey, privateKey: pair.privateKey, entry: reply.entry,
      approve: reply.approve_command };
    await saveKey(state.key);
    showKey();
  } catch (err) {
    $("key-error").textContent = "Enrolment failed: " + err.message;
  }
}

async function login() {
  $("key-error").textContent = "";
  try {
    const c = await api("POST", "/api/login/challenge", { key_id: state.key.key_id });
    const text = canonical({ purpose: "tablectl-console-login", challenge: c.challenge, key_id: state.key.key_id,
      origin: location.origin });
    await api("POST", "/api/login", { key_id: state.key.key_id, challenge: c.challenge, signature: await sign(text) });
    await refreshSession();
  } catch (err) {
    $("key-error").textContent = "Log-in refused: " + err.message;
  }
}

async function logout() {
  try { await api("POST", "/api/logout", {}); } catch (err) { /* the session may have expired already */ }
  await refreshSession();
}

function showKey() {
  const k = state.key;
  $("enrol-form").hidden = !!k;
  $("entry-box").hidden = !k;
  $("login-button").hidden = !k || !!(state.session && state.session.logged_in);
  if (k) {
    $("key-state").textContent = `This browser holds key ${k.key_id} (${k.role}); public key ${k.publicKey}.`;
    $("entry").textContent = k.entry;
    $("approve-command").textContent = k.approve || "";
  } else {
    $("key-state").textContent = "This browser holds no key yet.";
  }
}

async function refreshSession() {
  state.session = await api("GET", "/api/session");
  state.verbs = state.session.verbs || {};
  state.linkVerbs = state.session.link_verbs || {};
  const s = state.session;
  $("whoami").textContent = s.logged_in ? `${s.key_id} (${s.role}), session until ${s.expires.slice(11, 16)} UTC`
    : "not logged in";
  $("logout-button").hidden = !s.logged_in;
  $("keys").hidden = !!s.logged_in;
  $("floor").hidden = !s.logged_in;
  $("alerts-panel").hidden = !s.logged_in;
  $("links").hidden = !s.logged_in;
  showKey();
  if (s.logged_in) connect(); else disconnect();
}

// -- live updates --------------------------------------------------------------------------------------------------

let source = null;

function disconnect() {
  if (source) source.close();
  source = null;
  $("conn").textContent = "not connected";
  $("conn").className = "conn down";
}

function connect() {
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
  source.addEventListener("bye", () => { disconnect(); refreshSession(); });
}

// -- the floor view ------------------------------------------------------------------------------------------------

// Ages are measured on the floor's clock (the database's, floor/dbclock.py), which stamped what they are measured
// from: the server sends its now with the floor, each update and each heartbeat, and the page keeps how far the
// browser's clock is from it. A browser whose clock is off shows the same ages as any other.
function heard(now) {
  const at = Date.parse(now || "");
  if (!Number.isNaN(at)) state.skew = at - Date.now();
}

function since(ts) {
  if (!ts) return "";
  const s = Math.max(0, Math.round((Date.now() + state.skew - Date.parse(ts)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

function tile(t) {
  const faults = Object.keys(t.faults).length;
  const jackpots = Object.entries(t.pending_jackpots);
  const tilts = Object.keys(t.tilts);
  const devices = el("span", { class: "devices" }, el("span", { class: "dot " + (faults ? "bad" : "") }),
    faults ? `${faults} device(s) need attention` : "devices ok");
  const meters = Object.entries(t.meters).map(([lvl, m]) => `${lvl} ${dollars(m.display_cents)}`).join(" · ");
  const linked = Object.entries(t.linked_meters || {}).map(([lvl, m]) => `${lvl} ${dollars(m.display_cents)}`)
    .join(" · ");
  const links = (t.links || []).map((l) => el("div", { class: "link " + (l.healthy ? "ok" : "bad"),
    "data-link": l.link_id, "data-status": l.status, "data-leased": String(l.leased) },
    el("span", { class: "dot " + (l.healthy ? "" : "bad") }),
    `link ${l.link_id} ${l.status}` + (l.database === "down" ? ", database down" : "") +
    (l.leased ? ", leased" : ", no lease: linked wagers locked out")));
  const alerting = jackpots.length || tilts.length || (t.linked_jackpots || []).length;
  const node = el("div", { class: `tile ${t.state}` + (alerting ? " alerting" : ""),
    "data-table": t.table_id },
    el("div", { class: "row" }, el("span", { class: "name" }, t.table_id), el("span", { class: "state" }, t.state)),
    el("div", { class: "game" }, `${t.game || "?"} (${t.chapter || "?"})`),
    el("div", { class: "row" }, el("span", { class: "phase", "data-phase": t.phase }, t.phase),
      el("span", { class: "in-phase", "data-since": t.phase_since || "" }, since(t.phase_since))),
    el("div", { class: "row" }, el("span", { class: "players" }, `${t.players} players`),
      el("span", { class: "rph" }, `${t.rounds_per_hour} rounds/h`)),
    el("div", { class: "row" }, el("span", { class: "rounds" }, `${t.rounds_completed} rounds`),
      el("span", { class: "method" }, [t.dealing_method, t.shuffle].filter(Boolean).join(", "))),
    devices,
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

// target: "table" or "link"; a link's verbs are its own (the link judges them, link/commands.py).
function actionButton(target, targetId, verb, args, label) {
  if (!state.session) return null;
  const mine = target === "link" ? state.session.link_allowed : state.session.allowed;
  if (!(mine || []).includes(verb)) return null;
  const b = el("button", { "data-verb": verb, "data-target": target }, label || verb.replaceAll("_", " "));
  b.addEventListener("click", (ev) => { ev.stopPropagation(); confirmAndSend(targetId, verb, args, target); });
  return b;
}

function pitBox(pit) {
  let box = document.querySelector(`#floor .pit[data-pit="${CSS.escape(pit)}"] .tiles`);
  if (box) return box;
  const node = el("div", { class: "pit", "data-pit": pit }, el("h2", {}, `Pit ${pit}`), el("div", { class: "tiles" }));
  const after = [...$("floor").children].find((p) => p.getAttribute("data-pit") > pit);
  $("floor").insertBefore(node, after || null);
  return node.querySelector(".tiles");
}

function renderFloor() {
  $("floor").replaceChildren();
  for (const t of [...state.tiles.values()].sort((a, b) => a.table_id.localeCompare(b.table_id))) patchTile(t);
}

// One tile drawn again in its place; a new table's tile goes into its pit in table order.
function patchTile(t) {
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

function renderAlerts() {
  const all = [...state.alertGroups.values()].flat().sort(alertOrder);
  $("alert-count").textContent = `(${all.length})`;
  $("alerts").replaceChildren(...all.map((a) =>
    el("li", { class: "alert", "data-kind": a.kind, "data-table": a.table_id, "data-key": a.key,
      "data-target": a.target, "data-target-id": a.target_id },
      el("strong", {}, a.table_id), el("span", {}, a.text), el("span", { class: "since" }, since(a.since)),
      a.verb ? actionButton(a.target || "table", a.target_id || a.table_id, a.verb, a.args) : null)));
}

function renderLinks() {
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
          el("td", {}, x.last_seen ? `heard ${since(x.last_seen)} ago` : "not heard"))))),
      ...l.pending.map((h) => el("div", { class: "jackpot", "data-order": h.order },
        `pending: ${h.table_id} seat ${h.seat} ${h.level} ${dollars(h.amount_cents)} (win #${h.order})`)),
      el("div", { class: "link-actions" },
        actionButton("link", l.link_id, "open_link", { note: "opened from the floor console" }),
        actionButton("link", l.link_id, "close_link", { note: "closed from the floor console" })));
  }));
}

setInterval(() => {
  for (const s of document.querySelectorAll(".in-phase")) s.textContent = since(s.getAttribute("data-since"));
}, 1000);

// -- the table view ------------------------------------------------------------------------------------------------

function logItem(l) {
  return el("li", { "data-seq": l.seq, "data-type": l.type }, el("span", {}, l.seq), el("span", {}, l.ts.slice(11, 19)),
    el("span", {}, l.type), el("span", {}, l.text), el("span", { class: "rule" }, l.rule ? `[${l.rule}]` : ""));
}

function appendLine(l) {
  const log = $("tv-log");
  log.append(logItem(l));
  while (log.children.length > 300) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

function renderNow(t) {
  const rows = [["state", t.state], ["phase", `${t.phase} for ${since(t.phase_since)}`], ["round", t.round_id || "-"],
    ["dealing method", t.dealing_method || "-"], ["shuffle", t.shuffle || "-"], ["players", t.players],
    ["open tilts", Object.keys(t.tilts).join(", ") || "none"], ["blocks", Object.keys(t.blocks).join(", ") || "none"],
    ["links", (t.links || []).map((l) => `${l.link_id} ${l.status}, ${l.leased ? "leased" : "no lease"}`)
      .join("; ") || "none"]];
  $("tv-now").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-field": k }, v)]));
  $("tv-meters").replaceChildren(...Object.entries(t.meters).map(([lvl, m]) =>
    el("li", { "data-level": lvl }, `${lvl}: ${dollars(m.display_cents)} (reserve ${dollars(m.reserve_cents)}, hits ${m.hits})`)));
  renderActions(t);
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
  // Signed here with this browser's key and relayed like any command: the floor holds no key (docs/floor.md).
  const stale = new Set((t.stale_gaps || []).map(([a, b]) => `${a}-${b}`));
  for (const [a, b] of t.gaps || []) // at most 10,000 seqs a command (docs/commands.md, resend)
    add("resend", [el("span", {}, `seq ${a}-${b}${stale.has(`${a}-${b}`) ? " (stale)" : ""}`)],
      () => ({ from_seq: a, to_seq: Math.min(b, a + 9999) }));
  add("open_table", [], () => ({}));
  add("close_table", [], () => ({}));
  box.replaceChildren(...forms);
}

async function openTable(tableId) {
  state.open = tableId;
  $("table-view").hidden = false;
  $("floor").hidden = true;
  $("tv-title").textContent = tableId;
  const d = await api("GET", `/api/tables/${encodeURIComponent(tableId)}`);
  heard(d.now);
  renderNow(d.tile);
  $("tv-log").replaceChildren(...d.lines.map(logItem));
  $("tv-log").scrollTop = $("tv-log").scrollHeight;
  const ids = new Map(d.devices.map((x) => [x.device_id, x.identity || {}]));
  const names = new Set([...ids.keys(), ...Object.keys(d.tile.devices)]);
  $("tv-devices").tBodies[0].replaceChildren(...[...names].sort().map((n) => {
    const id = ids.get(n) || {};
    const st = (d.tile.devices[n] || {}).state || "unknown";
    return el("tr", { "data-device": n }, el("td", {}, n), el("td", {}, st), el("td", {}, id.model || "-"),
      el("td", {}, id.serial || "-"), el("td", {}, id.firmware || "-"));
  }));
  const sw = d.software || {};
  $("tv-software").textContent = sw.code_sha256 ? `tablectl ${sw.version}, code sha256 ${sw.code_sha256} over ` +
    `${sw.code_files} files; verdict: ${d.verdict || "none published"}` : "no birth message yet";
  $("tv-rounds").replaceChildren(...d.rounds.map((r) => el("div", { class: "round", "data-round": r.round_id },
    el("strong", {}, `${r.round_id} ${r.outcome}`),
    r.table_result !== null ? ` table result ${dollars(r.table_result)}` : "",
    el("ul", {}, ...r.settlements.map((s) => el("li", {},
      `${s.type} seat ${s.seat ?? "-"}: ${(s.cards || []).join(" ")} ${s.hand || ""} ` +
      (s.wagers ? s.wagers.map((w) => `${w.wager} ${dollars(w.amount)} ${w.outcome} paid ${dollars(w.paid)}`).join("; ")
        : `${s.outcome || ""} paid ${dollars(s.paid)}`) + (s.rule ? ` [${s.rule}]` : "")))))));
}

function closeTable() {
  state.open = null;
  $("table-view").hidden = true;
  $("floor").hidden = false;
}

// -- actions -------------------------------------------------------------------------------------------------------

let pending = null;

function confirmAndSend(tableId, verb, args, target) {
  const link = target === "link";
  const v = (link ? state.linkVerbs : state.verbs)[verb] || { confirm: verb, rule: "" };
  pending = { tableId, verb, args, link };
  $("confirm-text").textContent = `${v.confirm} ${link ? "on link" : "at table"} ${tableId}?`;
  $("confirm-rule").textContent = v.rule;
  $("confirm-args").textContent = Object.keys(args).length ? "with " + canonical(args) : "";
  $("confirm").showModal();
}

async function sendPending() {
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

// -- start ---------------------------------------------------------------------------------------------------------

window.tablectlConsole = { canonical, envelope, sign, isoMicro };

document.addEventListener("DOMContentLoaded", async () => {
  $("enrol-button").addEventListener("click", enrol);
  $("login-button").addEventListener("click", login);
  $("logout-button").addEventListener("click", logout);
  $("tv-close").addEventListener("click", closeTable);
  $("confirm-ok").addEventListener("click", sendPending);
  $("confirm-cancel").addEventListener("click", () => { pending = null; $("confirm").close(); });
  if (!window.crypto || !crypto.subtle) {
    $("key-error").textContent = "This page is not a secure context (https or 127.0.0.1): no WebCrypto, no keys.";
  }
  try { state.key = await loadKey(); } catch (err) { $("key-error").textContent = "IndexedDB: " + err.message; }
  await refreshSession();
});
