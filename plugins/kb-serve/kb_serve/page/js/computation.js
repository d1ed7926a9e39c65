// A computed answer's computation (answer.v1 "computation"): the result kb worked out, with its working,
// and each operand in the cited passage that holds it. Hovering or focusing the result (or the answer)
// lights every operand: the passage's line that holds it and, in a table row, its cell; hovering one
// operand lights that one. The passage's lines come from the document's stored text (as the viewer
// shows it); everything is text, never markup.

import { say } from "./answer.js";
import { el, inert, langProp, place } from "./dom.js";
import { PAGE_WORDS } from "./words.js";
import { documentText, lightLines } from "./viewer.js";

/** kb's sentence ``name`` (kb_core.service.words) as a list of text and nodes: each {place} is ``nodes[place]``. */
function sayWith(name, nodes) {
  return (PAGE_WORDS.words[name] || "").split(/(\{\w+\})/).filter(Boolean).map((part) => {
    const key = /^\{(\w+)\}$/.exec(part);
    return key ? (nodes[key[1]] ?? "?") : part;
  });
}

/** Where ``literal`` is written in ``text`` as a whole number (not inside a longer one): [start, end] pairs. */
export function numberAt(text, literal) {
  const found = [];
  const wanted = String(literal).trim();
  if (!wanted) return found;
  const digit = (char) => char !== undefined && char >= "0" && char <= "9";
  let at = text.indexOf(wanted);
  while (at >= 0) {
    const end = at + wanted.length;
    const before = text[at - 1];
    const after = text[end];
    const glued =
      digit(before) ||
      ((before === "." || before === ",") && digit(text[at - 2])) ||
      digit(after) ||
      ((after === "." || after === ",") && digit(text[end + 1]));
    if (!glued) found.push([at, end]);
    at = text.indexOf(wanted, at + 1);
  }
  return found;
}

/** The ways an operand may be written in its line: as kb read it, then its digits alone ("$ 1,571.7" → "1,571.7"). */
function spellings(literal) {
  const core = String(literal).match(/\d[\d,.]*\d|\d/);
  return core && core[0] !== literal ? [literal, core[0]] : [literal];
}

function holds(text, literal) {
  return typeof text === "string" && spellings(literal).some((form) => numberAt(text, form).length > 0);
}

/**
 * The document line of a passage's ``line`` (1-based in the passage) that holds ``literal``: the line at the
 * same offset from the citation's first line when it holds it, else the nearest line of the citation that does
 * (a PDF's passage may differ from the stored lines by a blank line); null when none does.
 */
export function documentLine(doc, citation, line, literal) {
  const first = citation.start_line;
  const last = Math.min(citation.end_line, doc.lines.length);
  const expected = first + line - 1;
  for (let distance = 0; distance <= last - first; distance += 1) {
    for (const n of distance ? [expected - distance, expected + distance] : [expected]) {
      if (n >= first && n <= last && holds(doc.lines[n - 1], literal)) return n;
    }
  }
  return null;
}

/** The header row above a table row: the nearest row of the table with an empty first cell and a year, else one without. */
function headerAbove(doc, citation, n) {
  let nearest = null;
  for (let k = n - 1; k >= citation.start_line; k -= 1) {
    const text = doc.lines[k - 1];
    if (typeof text !== "string" || !text.includes("|")) break;
    if (text.split("|")[0].trim()) continue;
    if (/\b(?:19|20)\d\d\b/.test(text)) return k;
    nearest ??= k;
  }
  return nearest;
}

/** Where ``operands`` ([index, operand] pairs) are written in ``text``: [start, end, index], in order. */
function placesOf(text, operands) {
  const spans = [];
  for (const [index, operand] of operands) {
    for (const form of spellings(operand.literal)) {
      const places = numberAt(text, form);
      if (places.length) {
        for (const [start, end] of places) spans.push([start, end, index]);
        break;
      }
    }
  }
  return spans.sort((a, b) => a[0] - b[0]);
}

/** ``text`` with each place an operand is written in a span that the result's hover lights. */
function marked(text, operands) {
  const spans = placesOf(text, operands);
  const parts = [];
  let cursor = 0;
  for (const [start, end, index] of spans) {
    if (start < cursor) continue; // (two operands written alike: one span holds both)
    if (start > cursor) parts.push(text.slice(cursor, start));
    const same = spans.filter((s) => s[0] === start).map((s) => s[2]);
    parts.push(el("span", { className: "calc-number", data: { operand: same.join(" ") } }, text.slice(start, end)));
    cursor = end;
  }
  if (cursor < text.length) parts.push(text.slice(cursor));
  return parts;
}

/** One line of the passage: a table row as cells (those holding an operand marked), or prose with its numbers marked. */
function passageLine(n, text, operands) {
  const indices = operands.map(([index]) => index).join(" ");
  const data = operands.length ? { operand: indices, n } : { n };
  if (!text.includes("|")) {
    return el("p", { className: "calc-line", data, lang: langProp(text) }, el("span", { className: "calc-n" }, String(n)), ...marked(text, operands));
  }
  const cells = text.split("|").map((cell) => {
    const holding = operands.filter(([, operand]) => holds(cell, operand.literal)).map(([index]) => index);
    return el("td", { className: "calc-cell", data: holding.length ? { operand: holding.join(" ") } : {} }, cell.trim());
  });
  return el("tr", { className: "calc-line", data }, el("td", { className: "calc-n" }, String(n)), ...cells);
}

/** The lines of one cited passage that hold the operands (and the header row above a table row), in order. */
function passageExcerpt(doc, item, operands) {
  const citation = item.citation;
  const byLine = new Map();
  for (const [index, operand] of operands) {
    const n = documentLine(doc, citation, operand.line, operand.literal);
    if (n === null) continue;
    if (!byLine.has(n)) byLine.set(n, []);
    byLine.get(n).push([index, operand]);
    const header = headerAbove(doc, citation, n);
    if (header !== null && !byLine.has(header)) byLine.set(header, []);
  }
  const parts = [];
  let table = null;
  for (const n of [...byLine.keys()].sort((a, b) => a - b)) {
    const text = doc.lines[n - 1];
    const row = passageLine(n, text, byLine.get(n));
    if (text.includes("|")) {
      if (!table) parts.push((table = el("table", { className: "calc-table" }, el("tbody", {}))));
      table.tBodies[0].append(row);
    } else {
      table = null;
      parts.push(row);
    }
  }
  return { parts, held: [...byLine.entries()].filter(([, held]) => held.length) };
}

function operandItem(index, operand, byMarker, link) {
  const item = operand.marker === null ? null : byMarker.get(operand.marker);
  const where =
    operand.source === "passage" && item
      ? [": ", ...sayWith("operand_in_passage", { marker: link(item, `[#${operand.marker}]`), line: String(operand.line) })]
      : [`: ${say(operand.source === "question" ? "operand_in_question" : "operand_constant")}`];
  return el(
    "li",
    { className: `calc-operand ${operand.source}`, tabIndex: 0, data: { lights: String(index), operand: String(index) } },
    el("span", { className: "calc-literal" }, operand.literal),
    ...where,
  );
}

/** The report's own figure for the result, rounded, and where it is written (null when no passage states it). */
function statedItem(stated, byMarker, link) {
  const item = stated ? byMarker.get(stated.marker) : null;
  if (!item) return null;
  const number = el("span", { className: "calc-literal" }, stated.literal);
  const marker = link(item, `[#${stated.marker}]`);
  return el("p", { className: "calc-stated" }, ...sayWith("stated_as", { number, marker, line: String(stated.line) }));
}

/** Light the operands named by the ``data-lights`` of the element under the pointer or focus (none: unlight). */
function lightOperands(root, lines) {
  const light = (trigger) => {
    const wanted = new Set((trigger?.dataset.lights || "").split(" ").filter(Boolean));
    for (const node of root.querySelectorAll("[data-operand]")) {
      node.classList.toggle("lit", node.dataset.operand.split(" ").some((index) => wanted.has(index)));
    }
    for (const [path, marks] of lines) lightLines(path, wanted.size ? marks(wanted) : []);
  };
  const selected = () => root.querySelector("[data-lights]:focus");
  root.addEventListener("mouseover", (event) => {
    const trigger = event.target.closest?.("[data-lights]");
    if (trigger) light(trigger);
  });
  root.addEventListener("mouseout", (event) => {
    if (event.target.closest?.("[data-lights]") && !event.relatedTarget?.closest?.("[data-lights]")) light(selected());
  });
  root.addEventListener("focusin", (event) => light(event.target.closest?.("[data-lights]")));
  root.addEventListener("focusout", () => light(null));
}

/**
 * The computation of a computed answer as DOM (null for any other answer): the result and its working, each
 * operand and where it is written, and the cited passages' lines that hold them (filled in once the documents'
 * stored text has arrived). ``root``: the answer's element, whose ``data-lights`` elements light the operands;
 * ``link(item, label)``: a link that opens a citation.
 */
export function renderComputation(answer, byMarker, root, link) {
  const computation = answer.computation;
  if (!computation || !Array.isArray(computation.operands)) return null;
  const all = computation.operands.map((_, index) => index).join(" ");
  const passages = el("div", { className: "calc-passages" });
  const box = el(
    "div",
    { className: "computation", role: "group", aria: { label: "How kb worked the answer out" } },
    el(
      "p",
      { className: "calc-head" },
      ...sayWith("worked_out", {
        working: el("span", { className: "calc-working" }, computation.working),
        result: el("span", { className: "calc-result", tabIndex: 0, title: "Hover over or focus the result to light its operands in the passage.", data: { lights: all } }, computation.result),
      }),
    ),
    el("ol", { className: "calc-operands" }, computation.operands.map((operand, index) => operandItem(index, operand, byMarker, link))),
    statedItem(computation.stated, byMarker, link),
    passages,
    el("p", { className: "hint muted small" }, "Hover over or focus the result (or one operand) to light where each number is written."),
  );
  const lines = new Map(); // path -> (wanted operand indices) -> the viewer's lines holding them, and where
  const byPassage = new Map();
  computation.operands.forEach((operand, index) => {
    if (operand.source !== "passage" || !byMarker.has(operand.marker) || !operand.line) return;
    if (!byPassage.has(operand.marker)) byPassage.set(operand.marker, []);
    byPassage.get(operand.marker).push([index, operand]);
  });
  for (const [marker, operands] of byPassage) {
    const item = byMarker.get(marker);
    const figure = el("figure", { className: "calc-passage", data: { passage: marker } }, el("figcaption", { className: "muted small" }, `[#${marker}] ${place(item.citation)}`));
    passages.append(figure);
    documentText(item.citation.path)
      .then((doc) => {
        const excerpt = passageExcerpt(doc, item, operands);
        figure.append(...excerpt.parts);
        // the viewer shows a line as inert() text: the numbers' places are found in that
        const shown = excerpt.held.map(([n, held]) => [n, inert(doc.lines[n - 1]), held]);
        lines.set(item.citation.path, (wanted) =>
          shown
            .map(([n, text, held]) => [n, text, held.filter(([index]) => wanted.has(String(index)))])
            .filter(([, , held]) => held.length)
            .map(([n, text, held]) => ({ n, places: placesOf(text, held) })),
        );
      })
      .catch(() => figure.append(el("p", { className: "muted small" }, "The passage's text could not be read.")));
  }
  lightOperands(root, lines);
  return box;
}
