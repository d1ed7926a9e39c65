// An answer as kb gave it (answer.v1, or a stored answer): its text with every [#n] a link to the
// cited lines, kb's verdict in words, its sources or (for a refusal) the nearest passages, and which
// passage supports each sentence (hover or select a sentence to light its citations).

import { renderComputation } from "./computation.js";
import { append, docHref, el, langProp, place } from "./dom.js";
import { momentPlayer } from "./recording.js";
import { PAGE_WORDS } from "./words.js";

const MARKER = /\[#(\d{1,3})\]/g;

const { words: WORDS, details: DETAILS, reason_sentences: REASONS } = PAGE_WORDS;

function score(value) {
  return typeof value === "number" ? value.toFixed(2) : "?";
}

/** kb's sentence ``name`` with its {places} filled in from ``values`` (the words are kb_core's, sent by kb serve). */
export function say(name, values = {}, table = WORDS) {
  return (table[name] || "").replace(/\{(\w+)\}/g, (_, key) => String(values[key] ?? "?"));
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A refusal's reason in two or three words (the history's badges). */
export const REASON_WORDS = PAGE_WORDS.reasons;

/** Why kb refused, in one sentence (as kb_core.service.words.reason_sentence says it). */
export function refusalSentence(answer) {
  const retrieval = answer.retrieval || {};
  const reason = answer.refusal_reason || "";
  if (reason === "llm_self_judge" && DETAILS[answer.refusal_detail]) return DETAILS[answer.refusal_detail];
  const values = { top_score: score(retrieval.top_score), score_gate: score(retrieval.score_gate) };
  return say(reason in REASONS ? reason : "", values, REASONS);
}

/** How kb stated the yes/no verdict: with its confidence, or withheld (null for other questions). */
function yesNo(answer) {
  if (answer.verdict !== "yes" && answer.verdict !== "no") return null;
  const sure = typeof answer.verdict_confidence === "number" ? answer.verdict_confidence.toFixed(2) : "unknown";
  const word = answer.verdict === "yes" ? "Yes" : "No";
  const text = ` ${say(answer.verdict_withheld ? "verdict_withheld" : "verdict_stated", { word, sure })}`;
  return el("span", { className: answer.verdict_withheld ? "yes-no withheld" : "yes-no" }, text);
}

/**
 * Whether an answer rests only on text OCR read with low confidence: it cites something, and every
 * citation has a region marked low (kb's own rule: kb_core.storage.regions.noted_low_confidence).
 */
function restsOnLowOcr(answer) {
  const cited = answer.citations || [];
  return cited.length > 0 && cited.every((item) => Boolean(item.region && item.region.low === true));
}

/** The warning of a grounded answer resting only on text OCR read with low confidence, with kb's note (else null). */
function ocrNote(answer) {
  if (!restsOnLowOcr(answer)) return null;
  const said = ` ${answer.note ? say("kb_note", { note: answer.note }) : say("low_ocr_sentence")}`;
  return el("p", { className: "ocr-note", role: "note" }, el("strong", {}, say("low_ocr")), said);
}

function verdict(answer) {
  if (answer.grounded) {
    const check = typeof answer.answer_check === "number" ? ` ${say("check_sentence", { p: score(answer.answer_check) })}` : "";
    return el(
      "div",
      { className: "verdict grounded", role: "status" },
      el("strong", {}, capitalised(say("grounded"))),
      " ",
      el("span", {}, `${say("grounded_sentence")}${check}`),
      yesNo(answer),
      ocrNote(answer),
    );
  }
  return el(
    "div",
    { className: "verdict refused", role: "status" },
    el("strong", {}, capitalised(say("refused"))),
    " ",
    el("span", { className: "reason" }, refusalSentence(answer)),
    answer.note ? el("span", { className: "note" }, ` ${say("kb_note", { note: answer.note })}`) : null,
  );
}

/** A link to a citation's lines; ``onOpen(citation, headingPath)`` opens it in the viewer. */
export function citationLink(item, label, onOpen, className = "cite") {
  const { citation } = item;
  return el(
    "a",
    {
      className,
      href: docHref(citation.path, citation.start_line, citation.end_line),
      title: `Open ${place(citation)}`,
      data: item.marker === null || item.marker === undefined ? {} : { marker: item.marker },
      on: {
        click(event) {
          if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
          event.preventDefault();
          onOpen(citation, item.heading_path || []);
        },
      },
    },
    label,
  );
}

/** ``text`` with every [#n] that names one of ``byMarker`` as a link (others stay text, marked as unknown). */
function withMarkers(text, byMarker, onOpen) {
  const parts = [];
  let cursor = 0;
  for (const match of text.matchAll(MARKER)) {
    if (match.index > cursor) parts.push(text.slice(cursor, match.index));
    const item = byMarker.get(Number(match[1]));
    parts.push(
      item
        ? citationLink(item, match[0], onOpen)
        : el("span", { className: "bad-marker", title: "not a passage kb found" }, match[0]),
    );
    cursor = match.index + match[0].length;
  }
  if (cursor < text.length) parts.push(text.slice(cursor));
  return parts;
}

function supportTitle(sentence) {
  if (sentence.kind !== "claim") return "Not a claim: it needs no source.";
  if (!sentence.supported_by.length) return "No passage supports this sentence.";
  const markers = sentence.supported_by.map((m) => `[#${m}]`).join(", ");
  const share = typeof sentence.support === "number" ? ` (${Math.round(sentence.support * 100)}% of it found there)` : "";
  return `Supported by ${markers}${share}${sentence.attributed ? "; kb found the source itself" : ""}.`;
}

function sentenceSpan(sentence, byMarker, onOpen) {
  const supported = sentence.kind !== "claim" || sentence.supported_by.length > 0;
  return el(
    "span",
    {
      className: `sentence ${sentence.kind === "claim" ? (supported ? "supported" : "unsupported") : "aside"}`,
      tabIndex: 0,
      title: supportTitle(sentence),
      data: { support: sentence.supported_by.join(" ") },
    },
    withMarkers(sentence.text, byMarker, onOpen),
  );
}

/** The answer's text, sentence by sentence when kb checked it, with its markers as links. */
function answerText(answer, byMarker, onOpen) {
  const text = answer.answer || "";
  // a computed answer: hovering or selecting it lights its operands too (computation.js)
  const operands = answer.computation && Array.isArray(answer.computation.operands) ? answer.computation.operands : [];
  const lights = operands.length ? { lights: operands.map((_, index) => index).join(" ") } : {};
  const box = el("div", { className: "answer-text", lang: langProp(text), data: lights });
  const sentences = Array.isArray(answer.sentences) ? answer.sentences : [];
  let cursor = 0;
  for (const sentence of sentences) {
    const at = text.indexOf(sentence.text, cursor);
    if (at < 0 || !sentence.text) continue;
    if (at > cursor) append(box, withMarkers(text.slice(cursor, at), byMarker, onOpen));
    box.append(sentenceSpan(sentence, byMarker, onOpen));
    cursor = at + sentence.text.length;
  }
  if (cursor < text.length) append(box, withMarkers(text.slice(cursor), byMarker, onOpen));
  return box;
}

function source(item, onOpen) {
  const marked = item.marker !== null && item.marker !== undefined;
  return el(
    "li",
    { className: "source", data: marked ? { marker: item.marker } : {} },
    marked ? citationLink(item, `[#${item.marker}]`, onOpen, "cite source-marker") : null,
    marked ? " " : null,
    citationLink(item, place(item.citation), onOpen, "source-place"),
    item.heading_path && item.heading_path.length
      ? el("span", { className: "crumbs", lang: langProp(item.heading_path.join(" ")) }, item.heading_path.join(" › "))
      : null,
    typeof item.score === "number" ? el("span", { className: "score" }, `score ${item.score.toFixed(2)}`) : null,
    regionNote(item.region),
    momentPlayer(item),
  );
}

/** Where a citation OCR read sits: its page and how sure OCR was ("page 2 · OCR 0.41, low"). */
function regionNote(region) {
  if (!region || typeof region.confidence !== "number") return null;
  const sure = region.confidence.toFixed(2);
  const title = region.low ? `low OCR confidence ${sure}: check it against the page` : `read by OCR, confidence ${sure}`;
  return el("span", { className: region.low ? "ocr-place low" : "ocr-place", title }, `page ${region.page} · OCR ${sure}${region.low ? ", low" : ""}`);
}

/** Light the citations (markers in the text and sources) of the sentence under the pointer or focus. */
function lightSupport(root) {
  const light = (sentence) => {
    const markers = new Set((sentence?.dataset.support || "").split(" ").filter(Boolean));
    for (const node of root.querySelectorAll("[data-marker]")) {
      node.classList.toggle("lit", markers.has(node.dataset.marker));
    }
    for (const node of root.querySelectorAll(".sentence.lit")) node.classList.remove("lit");
    if (sentence) sentence.classList.add("lit");
  };
  const selected = () => root.querySelector(".sentence:focus");
  root.addEventListener("mouseover", (event) => {
    const sentence = event.target.closest?.(".sentence");
    if (sentence) light(sentence);
  });
  root.addEventListener("mouseout", (event) => {
    if (event.target.closest?.(".sentence") && !event.relatedTarget?.closest?.(".sentence")) light(selected());
  });
  root.addEventListener("focusin", (event) => light(event.target.closest?.(".sentence")));
  root.addEventListener("focusout", () => light(null));
}

const BROKEN = {
  removed: "the document was removed",
  changed: "the cited text changed",
  ambiguous: "the cited text left its lines and now stands in several places",
};

/** Why a stored answer no longer holds: each broken citation, with the old and the new wording. */
function staleness(answer) {
  const items = (answer.citations || [])
    .filter((c) => c.now && (c.now.state === "stale" || c.now.state === "unverifiable"))
    .map((c) =>
      el(
        "li",
        {},
        `[#${c.marker}] ${c.ref}: ${c.now.state === "unverifiable" ? "cannot be checked any more" : BROKEN[c.now.reason] || "stale"}`,
        c.now.now_text ? el("div", { className: "muted small" }, `now: ${c.now.now_text}`) : null,
      ),
    );
  return el("div", { className: "stale-note" }, el("p", {}, "This answer no longer holds: the notes changed since."), el("ul", {}, items));
}

/** What kb searched for, when it is not what was asked (a follow-up made standalone); as text, never markup. */
export function searchedFor(asked, searched) {
  if (!searched || searched === asked) return null;
  return el("p", { className: "searched muted small" }, "searched for: ", el("span", { className: "standalone", lang: langProp(searched) }, searched));
}

/**
 * The whole answer as DOM: question, text, verdict, sources or nearest passages.
 * ``stored``: a stored answer (kb keeps no candidates or per-sentence support for it).
 * ``asked``, ``searched``: a turn of a conversation, the question as asked and as kb searched with it.
 */
export function renderAnswer(answer, { onOpen, stored = false, elapsed = null, asked = null, searched = null } = {}) {
  const cited = answer.citations || [];
  const candidates = answer.candidates || [];
  const byMarker = new Map();
  for (const item of [...cited, ...candidates]) {
    if (item.marker !== null && item.marker !== undefined && !byMarker.has(item.marker)) byMarker.set(item.marker, item);
  }
  const root = el("div", { className: answer.grounded ? "result grounded" : "result refused" });
  append(
    root,
    el("p", { className: "question", lang: langProp(asked ?? answer.question) }, asked ?? answer.question),
    searchedFor(asked ?? answer.question, searched),
    // a refusal shows kb's own text only (as kb_core.service.words.own_text): never the model's text kb refused
    answer.grounded || PAGE_WORDS.own_text_reasons.includes(answer.refusal_reason) ? answerText(answer, byMarker, onOpen) : null,
    answer.grounded ? renderComputation(answer, byMarker, root, (item, label) => citationLink(item, label, onOpen)) : null,
    verdict(answer),
  );
  const sentences = Array.isArray(answer.sentences) ? answer.sentences : [];
  if (answer.grounded && sentences.some((s) => s.kind === "claim")) {
    root.append(el("p", { className: "hint muted small" }, "Hover over or select a sentence to light the passage that supports it."));
  }
  if (cited.length) {
    root.append(el("h3", {}, say("sources_title")), el("ol", { className: "sources" }, cited.map((c) => source(c, onOpen))));
  }
  if (!answer.grounded && candidates.length) {
    const title = say(answer.refusal_detail === "not_answered" ? "cited_title" : "nearest_title");
    root.append(el("h3", {}, title), el("ol", { className: "sources candidates" }, candidates.map((c) => source(c, onOpen))));
  }
  if (stored && (answer.state === "stale" || answer.state === "unverifiable")) root.append(staleness(answer));
  const facts = [];
  if (stored) facts.push(`stored ${answer.created_at}`);
  if (answer.retrieval && answer.retrieval.mode) {
    facts.push(`${answer.retrieval.mode} search`, `${answer.retrieval.chunks_returned} passages found`);
  }
  if (elapsed !== null) facts.push(elapsed < 1000 ? "answered in less than a second" : `answered in ${(elapsed / 1000).toFixed(1)} s`);
  if (facts.length) root.append(el("p", { className: "facts muted small" }, facts.join(" · ")));
  lightSupport(root);
  return root;
}
