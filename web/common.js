/* What the pages of `pocketdec serve` share (the playground at /, annotation at /teach): elements, the
 * status line, and calls of this server's API that ask for the API key on a 401, in the page's form (not
 * a prompt(): the form can say why). The key stays in this page's memory: no storage, no cookie. */
"use strict";
window.pdPage = (function () {
  const $ = (id) => document.getElementById(id);
  let key = null; // the API key: memory only, never stored

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function status(msg, error) {
    $("status").textContent = msg || "";
    $("status").className = error ? "error" : "";
  }

  function askKey() {
    return new Promise((resolve) => {
      const form = $("key");
      form.hidden = false;
      $("key-input").focus();
      form.onsubmit = (ev) => {
        ev.preventDefault();
        form.hidden = true;
        resolve($("key-input").value);
        $("key-input").value = "";
      };
    });
  }

  /* A call of this server's API; asks for the key on 401 and tries again. A refusal throws an Error
   * with the server's message and the HTTP status. */
  async function api(method, path, body) {
    for (let tries = 0; ; tries++) {
      const headers = {};
      if (key !== null) headers.Authorization = "Bearer " + key;
      const raw = body instanceof Blob; // a file's bytes as they are; anything else as JSON
      if (body !== undefined) headers["Content-Type"] = raw ? "application/octet-stream" : "application/json";
      const r = await fetch(path, { method, headers, body: body === undefined || raw ? body : JSON.stringify(body) });
      if (r.status === 401 && tries < 5) {
        status(key === null ? "the server needs its API key" : "that key was refused", key !== null);
        key = await askKey();
        status("");
        continue;
      }
      const data = await r.json().catch(() => ({ error: "HTTP " + r.status + " (not JSON)" }));
      if (!r.ok) throw Object.assign(new Error(data.error || "HTTP " + r.status), { status: r.status });
      return data;
    }
  }

  return { $, el, status, api };
})();
