// Ask: the question box, the answer streamed in token by token, and Stop (or Esc), which aborts the fetch;
// the server then stops the generation at its next token.
//
// Questions make a conversation, a thread on the server: the first one starts it (POST /threads), each
// next one is a follow-up in it (POST /threads/{id}/ask), which kb makes standalone before it searches
// ("Which port does it listen on?" is searched as "... (the Heliograph daemon)"); the page says what kb
// searched for when that differs from what was asked, as soon as the stream's `standalone` event tells
// it (before the answer is written), and keeps saying it under the finished turn. Earlier turns stay
// above the latest one; "New conversation" starts over.

import { ApiError, checked, readEvents, request } from "./api.js";
import { renderAnswer, searchedFor } from "./answer.js";
import { byId, el, fill, inert, langProp, setText } from "./dom.js";

let controller = null;
let openCitation = () => {};
/** The thread the next question continues (null: the next question starts one). */
let threadId = null;
/** Whether #answer shows a turn the server kept (it moves up, among the earlier turns, on the next question). */
let kept = false;

function state(text) {
  setText(byId("ask-state"), text);
}

function asking(on) {
  byId("stop-button").hidden = !on;
  byId("ask-button").disabled = on;
  byId("answer").setAttribute("aria-busy", on ? "true" : "false");
}

/** Show the controls of the conversation as it stands. */
function conversation() {
  const earlier = byId("earlier");
  earlier.hidden = earlier.childElementCount === 0;
  byId("new-thread").hidden = threadId === null && earlier.hidden;
  byId("question").placeholder = threadId === null ? "Ask your notes a question" : "Ask a follow-up question";
}

function errorBox(error) {
  const hint = error instanceof ApiError && error.hint ? error.hint : "";
  return el("div", { className: "verdict failed", role: "alert" }, el("strong", {}, "Error"), " ", error.message, hint ? el("span", { className: "note" }, ` ${hint}`) : null);
}

/** Stop the answer being written (the fetch is aborted; the server stops generating). */
export function stop() {
  if (controller) controller.abort();
}

/** Forget the conversation: the next question starts a new one. */
function forget() {
  stop();
  threadId = null;
  kept = false;
  fill(byId("earlier"));
  const box = byId("answer");
  fill(box);
  box.hidden = true;
  conversation();
  state("");
}

/** Start over: a new conversation (the one before stays on the server, listed by GET /threads). */
export function newConversation() {
  forget();
  byId("question").focus();
}

/** Show an answer given whole (a stored one, reopened from the history); it ends the conversation. */
export function showAnswer(answer, options = {}) {
  forget();
  const box = byId("answer");
  box.hidden = false;
  fill(box, renderAnswer(answer, { onOpen: openCitation, ...options }));
  state(options.stored ? "A stored answer" : "");
}

/** A turn of the conversation (turn.v1): the question as asked, what kb searched for, the answer. */
function renderTurn(turn, elapsed) {
  const searched = turn.method === "as_asked" ? null : turn.standalone;
  return renderAnswer(turn.answer, { onOpen: openCitation, asked: turn.asked, searched, elapsed });
}

/** Ask ``question`` (in the conversation, if one is open) and stream its answer into the page. */
export async function ask(question) {
  stop();
  const mine = new AbortController();
  controller = mine;
  const box = byId("answer");
  if (kept) byId("earlier").append(...box.childNodes); // the last turn stays visible, above
  kept = false;
  const continuing = threadId;
  conversation();
  const live = document.createTextNode("");
  const text = el("div", { className: "answer-text streaming", lang: langProp(question) }, live, el("span", { className: "caret", aria: { hidden: "true" } }));
  const shownQuestion = el("p", { className: "question", lang: langProp(question) }, question);
  box.hidden = false;
  fill(box, el("div", { className: "result" }, shownQuestion, text));
  asking(true);
  state(continuing ? "Reading the conversation, then searching…" : "Searching the knowledge base…");
  const began = performance.now();
  let first = true;
  let finished = false;
  try {
    const path = continuing ? `/threads/${encodeURIComponent(continuing)}/ask` : "/threads";
    const response = await checked(await request(`${path}?stream=1`, { method: "POST", json: { question }, signal: mine.signal }));
    for await (const [event, data] of readEvents(response.body)) {
      if (event === "standalone") {
        // what kb searches with, before it searches: said at once when kb completed the question
        const searched = data.method === "as_asked" ? null : searchedFor(question, data.question);
        if (searched) shownQuestion.after(searched);
        state("Searching the knowledge base…");
      } else if (event === "token") {
        live.appendData(inert(data.text));
        if (first) {
          first = false;
          performance.mark("kb:first-token");
          state("Writing…");
        }
      } else if (event === "turn") {
        finished = true;
        if (controller === mine) {
          threadId = data.thread_id;
          kept = true;
        }
        fill(box, renderTurn(data, performance.now() - began));
        const asked = byId("question");
        if (asked.value.trim() === question) asked.value = ""; // ready for the next follow-up
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
    } else if (error instanceof ApiError && error.status === 404 && continuing) {
      if (threadId === continuing) threadId = null;
      box.append(errorBox(new Error("This conversation is no longer on the server; ask again to start a new one.")));
      state("");
    } else {
      box.append(errorBox(error));
      state("");
    }
  } finally {
    if (controller === mine) {
      controller = null;
      asking(false);
      conversation();
    }
  }
}

/** Wire the form: Enter asks (Shift+Enter: a new line), Stop and Esc stop, "New conversation" starts over. */
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
    if (event.key === "Enter" && !event.isComposing && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  byId("stop-button").addEventListener("click", stop);
  byId("new-thread").addEventListener("click", newConversation);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && controller) {
      event.preventDefault();
      stop();
    }
  });
  conversation();
}
