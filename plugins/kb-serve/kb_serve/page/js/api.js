// Talking to kb serve: same-origin requests that pass its guards (JSON bodies as application/json,
// the browser's own Origin), the bearer token when the server asks for one, and the event stream
// of /ask/stream read from fetch (EventSource cannot POST).

import { byId, setText } from "./dom.js";

const TOKEN_KEY = "kb-serve-token";
let waitingForToken = null;

/** An error answer of the API: its status and its {error, hint} body. */
export class ApiError extends Error {
  constructor(status, body) {
    const error = body && typeof body.error === "string" ? body.error : `the server answered ${status}`;
    super(error);
    this.status = status;
    this.hint = body && typeof body.hint === "string" ? body.hint : "";
  }
}

function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** Show the token form; resolves once the user gives a token (shared by every request that got a 401). */
function askForToken(message) {
  const form = byId("token-form");
  setText(byId("token-error"), token() ? message : "");
  if (!waitingForToken) {
    waitingForToken = new Promise((resolve) => {
      form.hidden = false;
      byId("token-input").focus();
      form.addEventListener("submit", function submitted(event) {
        event.preventDefault();
        const given = byId("token-input").value.trim();
        if (!given) return;
        sessionStorage.setItem(TOKEN_KEY, given);
        byId("token-input").value = "";
        form.hidden = true;
        form.removeEventListener("submit", submitted);
        waitingForToken = null;
        resolve();
      });
    });
  }
  return waitingForToken;
}

/** The JSON body of a response, or null when it has none (an error's {error, hint}, whatever its status). */
async function bodyOf(response) {
  try {
    return await response.json();
  } catch {
    return null;
  }
}

/**
 * fetch() for the API: ``json`` is sent as application/json, ``form`` as multipart; the token goes
 * along as Authorization: Bearer. A 401 asks for the token and tries again.
 */
export async function request(path, { method = "GET", json, form, signal } = {}) {
  for (;;) {
    const headers = new Headers();
    const given = token();
    if (given) headers.set("Authorization", `Bearer ${given}`);
    const init = { method, headers, signal, cache: "no-store", redirect: "error" };
    if (json !== undefined) {
      headers.set("Content-Type", "application/json");
      init.body = JSON.stringify(json);
    } else if (form !== undefined) {
      init.body = form;
    }
    const response = await fetch(path, init);
    if (response.status !== 401) return response;
    await askForToken(new ApiError(401, await bodyOf(response)).message);
  }
}

/** ``response`` when it succeeded, else an ApiError of its status and its {error, hint} body. */
export async function checked(response) {
  if (!response.ok) throw new ApiError(response.status, await bodyOf(response));
  return response;
}

/** The JSON body of a request, or an ApiError. */
export async function getJSON(path, options) {
  return bodyOf(await checked(await request(path, options)));
}

/**
 * Why ``path`` cannot be a stored document's path, or "" when it can. A stored path is relative with
 * no empty, "." or ".." part; a URL made of one with such a part would leave /documents/ (the
 * browser resolves "/documents/../../health" to "/health" before it sends the request).
 */
export function pathProblem(path) {
  const parts = String(path).split("/");
  if (parts.some((part) => part === "" || part === "." || part === "..")) {
    return "a document's path has no empty, '.' or '..' part (this link was not made by kb)";
  }
  return "";
}

/** The URL path of a stored document (each part percent-encoded); an error for a path pathProblem refuses. */
export function documentPath(path) {
  const problem = pathProblem(path);
  if (problem) throw new Error(problem);
  return `/documents/${path.split("/").map(encodeURIComponent).join("/")}`;
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? [name, JSON.parse(data.join("\n"))] : null;
}

/** The [event, data] pairs of a text/event-stream body, as they arrive. */
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event) yield event;
      }
    }
    const last = parseEvent(buffer);
    if (last) yield last;
  } finally {
    reader.cancel().catch(() => {});
  }
}
