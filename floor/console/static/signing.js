// Signing, in the browser: the supervisor's Ed25519 key, made here with WebCrypto as non-extractable and kept in
// IndexedDB, signs the same canonical form `tablectl command send` signs (controller/supervisor/envelope.py); the
// floor relays the envelope untouched.

import { state } from "./page.js";

// -- the canonical form and signing ----------------------------------------------------------------------------

// JSON with keys sorted at every level and no spaces, as Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False): JSON.stringify escapes the same characters the same way.
export function canonical(value) {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  }
  if (typeof value === "number" && !Number.isInteger(value)) throw new Error("only integers are signed");
  return JSON.stringify(value);
}

export function b64(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s);
}

function hex(n) {
  const a = new Uint8Array(n);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function sign(text) {
  return b64(await crypto.subtle.sign("Ed25519", state.key.privateKey, new TextEncoder().encode(text)));
}

// ISO 8601 in UTC with microseconds and Z, as iso_utc() writes issued_at.
export function isoMicro(d) {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export async function envelope(tableId, verb, args) {
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

export async function loadKey() {
  const d = await db();
  return new Promise((resolve, reject) => {
    const r = d.transaction("keys").objectStore("keys").get("me");
    r.onsuccess = () => resolve(r.result || null);
    r.onerror = () => reject(r.error);
  });
}

export async function saveKey(record) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction("keys", "readwrite");
    t.objectStore("keys").put(record, "me");
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
  });
}
