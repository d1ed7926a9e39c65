// History: the questions asked before (GET /answers, newest first); one reopens with its citations.

import { getJSON } from "./api.js";
import { REASON_WORDS, say } from "./answer.js";
import { byId, el, fill, langProp, setText } from "./dom.js";

function when(created) {
  const date = new Date(created);
  return Number.isNaN(date.getTime()) ? created : date.toLocaleString();
}

function row(item, onReopen) {
  const reason = item.refusal_reason || "";
  const broken = item.state === "stale" || item.state === "unverifiable";
  const grounded = say("grounded");
  const outcome = item.grounded ? (broken ? `${grounded}, now ${item.state}` : grounded) : `${say("refused")}: ${REASON_WORDS[reason] || reason || "?"}`;
  return el(
    "li",
    { className: item.grounded ? "asked grounded" : "asked refused" },
    el(
      "a",
      {
        href: `#/answer/${encodeURIComponent(item.answer_id)}`,
        className: "asked-question",
        lang: langProp(item.question),
        on: {
          click(event) {
            event.preventDefault();
            onReopen(item.answer_id);
          },
        },
      },
      item.question,
    ),
    el("span", { className: `badge ${item.grounded && !broken ? "ok" : "no"}`, title: reason || undefined }, outcome),
    el("span", { className: "muted small" }, when(item.created_at)),
  );
}

/** Load the stored questions again. */
export async function refreshHistory(onReopen) {
  setText(byId("history-state"), "Loading…");
  try {
    const history = await getJSON("/answers?limit=100");
    fill(byId("history-list"), history.answers.map((item) => row(item, onReopen)));
    const shown = history.answers.length;
    setText(
      byId("history-state"),
      shown ? `${shown} of ${history.total} stored question${history.total === 1 ? "" : "s"}, newest first` : "No questions asked yet.",
    );
  } catch (error) {
    setText(byId("history-state"), error.message);
  }
}

/** A stored answer by its id ("." and "..", which the browser would resolve out of /answers/, are refused). */
export function loadAnswer(answerId) {
  const id = String(answerId);
  if (!id || id === "." || id === "..") return Promise.reject(new Error(`${id || "an empty id"} is not a stored answer's id`));
  return getJSON(`/answers/${encodeURIComponent(id)}`);
}
