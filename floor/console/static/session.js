// Enrolment, log-in and the session: the key made here, the challenge signed with it, and the page shown as the
// session allows (docs/console.md, "Enrolment").

import { connect, disconnect } from "./live.js";
import { $, api, state } from "./page.js";
import { b64, canonical, saveKey, sign } from "./signing.js";

export async function enrol() {
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

export async function login() {
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

export async function logout() {
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

export async function refreshSession() {
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
  $("refused-panel").hidden = !s.logged_in || !(state.refused && state.refused.count);
  showKey();
  if (s.logged_in) connect(refreshSession); else disconnect();
}
