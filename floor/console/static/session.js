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
    $("key-error").textContent = "";
    showKey();
  } catch (err) {
    $("key-error").textContent = "Enrolment failed: " + err.message;
  }
}

// Until /api/session has answered the page does not know its session: it says so, and offers neither log-in nor
// log-out (a log-out sent then carries no CSRF token and is refused). Nor while one of them is on its way.
let known = false;
let busy = false;

function buttons() {
  $("login-button").disabled = !known || busy;
  $("logout-button").disabled = !known || busy;
}

// A refused log-in or log-out says why where the user looks, not in the browser's console only.
function say(problem) {
  $("session-error").textContent = problem;
  $("session-error").hidden = !problem;
}

export async function login() {
  if (!known || busy || !state.key) return;
  $("key-error").textContent = "";
  say("");
  busy = true;
  buttons();
  try {
    const c = await api("POST", "/api/login/challenge", { key_id: state.key.key_id });
    const text = canonical({ purpose: "tablectl-console-login", challenge: c.challenge, key_id: state.key.key_id,
      origin: location.origin });
    await api("POST", "/api/login", { key_id: state.key.key_id, challenge: c.challenge, signature: await sign(text) });
  } catch (err) {
    $("key-error").textContent = "Log-in refused: " + err.message;
    return;
  } finally {
    busy = false;
    buttons();
  }
  await refreshSession();
}

export async function logout() {
  if (!known || busy || !(state.session && state.session.logged_in)) return;
  say("");
  busy = true;
  buttons();
  try {
    await api("POST", "/api/logout", {});
  } catch (err) {
    // An expired session is refused too: the session asked again below shows it ended.
    say("Log-out refused: " + err.message);
  } finally {
    busy = false;
  }
  await refreshSession();
}

// A key this floor has no enrolment of (a new floor, a rejected enrolment) is replaced by a new one: the form again,
// its enrolment saving the new key over the old.
export function newKey() {
  $("enrol-form").hidden = false;
  $("new-key-button").hidden = true;
}

function showKey() {
  const k = state.key;
  $("enrol-form").hidden = !!k;
  $("new-key-button").hidden = !k;
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
  known = false;
  $("whoami").setAttribute("data-session", "loading");
  $("whoami").textContent = "loading the session…";
  buttons();
  try {
    state.session = await api("GET", "/api/session");
  } catch (err) {
    $("whoami").setAttribute("data-session", "unknown");
    $("whoami").textContent = "session unknown";
    say(`The session could not be read: ${err.message}; reload the page to try again`);
    return;
  }
  known = true;
  $("whoami").setAttribute("data-session", "known");
  buttons();
  state.verbs = state.session.verbs || {};
  state.linkVerbs = state.session.link_verbs || {};
  const s = state.session;
  $("whoami").textContent = s.logged_in ? `${s.key_id} (${s.role}), session until ${s.expires.slice(11, 16)} UTC`
    : "not logged in";
  $("logout-button").hidden = !s.logged_in;
  $("reports-button").hidden = !s.logged_in || s.role !== "supervisor"; // the console refuses the others (403)
  if (!s.logged_in) $("reports").hidden = true;
  $("keys").hidden = !!s.logged_in;
  $("floor").hidden = !s.logged_in;
  $("alerts-panel").hidden = !s.logged_in;
  $("links").hidden = !s.logged_in;
  $("refused-panel").hidden = !s.logged_in || !(state.refused && state.refused.count);
  showKey();
  if (s.logged_in) connect(refreshSession); else disconnect();
}
