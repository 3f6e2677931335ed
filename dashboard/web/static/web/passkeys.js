// Passkeys (WebAuthn): the sign-in's button ([data-passkey-sign-in]), on
// its own or as the second factor, and the Two-factor page's
// ([data-passkey-add]). The server makes the options and checks the
// answers (accounts/passkeys.py); the browser's own JSON forms carry them.
"use strict";

(() => {
  const csrf = () => document.querySelector("input[name=csrfmiddlewaretoken]").value;

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/json" },
      body: JSON.stringify(body || {}),
    });
    let data = {};
    try { data = await response.json(); } catch (_) { /* not JSON: the status says it */ }
    if (!response.ok) {
      if (data.next) window.location.assign(data.next);  // asked to give a second factor first
      throw new Error(data.error || `The server answered ${response.status}.`);
    }
    return data;
  }

  function say(status, text) {
    status.textContent = text;
    status.hidden = !text;
  }

  function explain(err) {
    if (err.name === "NotAllowedError") return "No passkey was given (cancelled, or none of this site's is on this device).";
    if (err.name === "InvalidStateError") return "This device has a passkey of yours already.";
    return err.message;
  }

  function wire(button, ceremony) {
    const status = document.getElementById(button.dataset.status);
    if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) {
      button.disabled = true;
      say(status, "This browser cannot use passkeys.");
      return;
    }
    button.addEventListener("click", async () => {
      button.setAttribute("aria-busy", "true");
      say(status, "");
      try {
        window.location.assign((await ceremony()).next);
      } catch (err) {
        say(status, explain(err));
      } finally {
        button.removeAttribute("aria-busy");
      }
    });
  }

  for (const button of document.querySelectorAll("[data-passkey-sign-in]")) {
    wire(button, async () => {
      const options = await post(button.dataset.options);
      const credential = await navigator.credentials.get({
        publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
      });
      return post(button.dataset.url, { credential: credential.toJSON(), next: button.dataset.next || "" });
    });
  }

  for (const button of document.querySelectorAll("[data-passkey-add]")) {
    const name = document.getElementById(button.dataset.name);
    wire(button, async () => {
      const options = await post(button.dataset.options);
      const credential = await navigator.credentials.create({
        publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
      });
      return post(button.dataset.url, { credential: credential.toJSON(), name: name.value });
    });
  }
})();
