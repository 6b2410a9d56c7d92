// What every part of the console page shares: its state, the DOM helpers, ages on the floor's clock and the one
// HTTP call. Text from the server goes into the page as text only (textContent), never as markup.

// tileCount: how many tiles of each table the live stream brought (table.js tells an older answer by it).
export const state = { session: null, tiles: new Map(), tileCount: new Map(), alertGroups: new Map(), links: new Map(),
  open: null, refused: null, verbs: {}, linkVerbs: {}, key: null, skew: 0 };
export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

// A resend asks for at most the floor's MAX_SEQS seqs (floor/gaps.py, served with the session): the gap's own button
// and "Resend every gap" ask for the same first part, and neither can drift from what the floor's alerts ask for.
export function resendUpTo(from, to) {
  const most = (state.session && state.session.resend_max_seqs) || 1;
  return Math.min(to, from + most - 1);
}

export const dollars = (cents) => "$" + (Number(cents || 0) / 100).toLocaleString("en-US", { minimumFractionDigits: 2 });

// Ages are measured on the floor's clock (the database's, floor/dbclock.py), which stamped what they are measured
// from: the server sends its now with the floor, each update and each heartbeat, and the page keeps how far the
// browser's clock is from it. A browser whose clock is off shows the same ages as any other.
export function heard(now) {
  const at = Date.parse(now || "");
  if (!Number.isNaN(at)) state.skew = at - Date.now();
}

export function since(ts) {
  if (!ts) return "";
  const s = Math.max(0, Math.round((Date.now() + state.skew - Date.parse(ts)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

// -- HTTP ----------------------------------------------------------------------------------------------------------

export async function api(method, path, body, raw) {
  const headers = {};
  if (method !== "GET") headers["Content-Type"] = "application/json";
  if (state.session && state.session.csrf) headers["X-CSRF-Token"] = state.session.csrf;
  const r = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: raw !== undefined ? raw : body !== undefined ? JSON.stringify(body) : undefined,
  });
  const data = await r.json().catch(() => ({}));
  if (!r.ok && !(r.status === 504 && data.outcome)) throw new ApiError(r.status, data.error || "");
  return data;
}

// A refusal from the console: its status and its reason (the server's words), shown to the user as both.
export class ApiError extends Error {
  constructor(status, reason) {
    super(reason ? `${reason} (HTTP ${status})` : `HTTP ${status}`);
    this.status = status;
  }
}
