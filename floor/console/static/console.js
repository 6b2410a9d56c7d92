// The floor console in the browser (docs/console.md). Shipped as is: no build step, no library, nothing fetched
// from elsewhere. The supervisor's Ed25519 key is made here with WebCrypto as non-extractable and kept in
// IndexedDB; commands are signed here over the same canonical form `tablectl command send` signs
// (controller/supervisor/envelope.py) and the floor relays them untouched. Text from the server goes into the
// page as text only (textContent), never as markup. An ES module: the page's parts are modules beside it, each
// named for its concern (page, signing, session, live, floor, table, commands, reports).

import { cancelPending, confirmResendAll, sendPending } from "./commands.js";
import { $, state } from "./page.js";
import { wireReports } from "./reports.js";
import { enrol, login, logout, newKey, refreshSession } from "./session.js";
import { canonical, envelope, isoMicro, loadKey, sign } from "./signing.js";
import { closeTable } from "./table.js";

// -- start ---------------------------------------------------------------------------------------------------------

window.tablectlConsole = { canonical, envelope, sign, isoMicro };

document.addEventListener("DOMContentLoaded", async () => {
  $("enrol-button").addEventListener("click", enrol);
  $("login-button").addEventListener("click", login);
  $("new-key-button").addEventListener("click", newKey);
  $("logout-button").addEventListener("click", logout);
  $("tv-close").addEventListener("click", closeTable);
  $("confirm-ok").addEventListener("click", sendPending);
  $("confirm-cancel").addEventListener("click", cancelPending);
  $("resend-all").addEventListener("click", confirmResendAll);
  wireReports();
  if (!window.crypto || !crypto.subtle) {
    $("key-error").textContent = "This page is not a secure context (https or 127.0.0.1): no WebCrypto, no keys.";
  }
  try { state.key = await loadKey(); } catch (err) { $("key-error").textContent = "IndexedDB: " + err.message; }
  await refreshSession();
});
