// Ask: the question box, the answer streamed in token by token over POST /ask/stream, and Stop
// (or Esc), which aborts the fetch; the server then stops the generation at its next token.

import { ApiError, readEvents, request } from "./api.js";
import { renderAnswer } from "./answer.js";
import { byId, el, fill, langProp, setText } from "./dom.js";

let controller = null;
let openCitation = () => {};

function state(text) {
  setText(byId("ask-state"), text);
}

function asking(on) {
  byId("stop-button").hidden = !on;
  byId("ask-button").disabled = on;
  byId("answer").setAttribute("aria-busy", on ? "true" : "false");
}

function errorBox(error) {
  const hint = error instanceof ApiError && error.hint ? error.hint : "";
  return el("div", { className: "verdict failed", role: "alert" }, el("strong", {}, "Error"), " ", error.message, hint ? el("span", { className: "note" }, ` ${hint}`) : null);
}

/** Stop the answer being written (the fetch is aborted; the server stops generating). */
export function stop() {
  if (controller) controller.abort();
}

/** Show an answer given whole (a stored one, reopened from the history). */
export function showAnswer(answer, options = {}) {
  stop();
  const box = byId("answer");
  box.hidden = false;
  fill(box, renderAnswer(answer, { onOpen: openCitation, ...options }));
  state(options.stored ? "A stored answer" : "");
}

/** Ask ``question`` and stream its answer into the page. */
export async function ask(question) {
  stop();
  const mine = new AbortController();
  controller = mine;
  const box = byId("answer");
  const live = document.createTextNode("");
  const text = el("div", { className: "answer-text streaming", lang: langProp(question) }, live, el("span", { className: "caret", aria: { hidden: "true" } }));
  box.hidden = false;
  fill(box, el("div", { className: "result" }, el("p", { className: "question", lang: langProp(question) }, question), text));
  asking(true);
  state("Searching the knowledge base…");
  const began = performance.now();
  let first = true;
  let finished = false;
  try {
    const response = await request("/ask/stream", { method: "POST", json: { question }, signal: mine.signal });
    if (!response.ok) {
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      throw new ApiError(response.status, body);
    }
    for await (const [event, data] of readEvents(response.body)) {
      if (event === "token") {
        live.appendData(data.text);
        if (first) {
          first = false;
          performance.mark("kb:first-token");
          state("Writing…");
        }
      } else if (event === "answer") {
        finished = true;
        fill(box, renderAnswer(data, { onOpen: openCitation, elapsed: performance.now() - began }));
        state("");
      } else if (event === "error") {
        finished = true;
        text.classList.remove("streaming");
        box.append(errorBox(new ApiError(200, data)));
        state("");
      }
    }
    if (!finished) throw new Error("the answer stream ended early");
  } catch (error) {
    text.classList.remove("streaming");
    if (error.name === "AbortError") {
      text.classList.add("stopped");
      state("Stopped: kb stopped writing the answer.");
    } else {
      box.append(errorBox(error));
      state("");
    }
  } finally {
    if (controller === mine) {
      controller = null;
      asking(false);
    }
  }
}

/** Wire the form: Enter asks (Shift+Enter: a new line), Stop and Esc stop. */
export function setupAsk({ onOpen }) {
  openCitation = onOpen;
  const form = byId("ask-form");
  const question = byId("question");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (text) ask(text);
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  byId("stop-button").addEventListener("click", stop);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && controller) {
      event.preventDefault();
      stop();
    }
  });
}
