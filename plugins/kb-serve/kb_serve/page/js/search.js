// Search: a query, a mode and a path filter; each hit shows its place, heading path and snippet
// with the query's words marked, and opens the document at its lines.

import { getJSON } from "./api.js";
import { citationLink } from "./answer.js";
import { byId, el, fill, langProp, place, setText } from "./dom.js";

const HAN_RUN = /^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+$/u;
const HANGUL_WORD = /^[\uac00-\ud7af]+$/u;
// Korean particles and endings that follow a noun in a question but not in the notes' own text.
const PARTICLES = ["에서는", "에서", "에는", "으로", "는", "은", "이", "가", "을", "를", "의", "에", "도", "로", "와", "과"];
const SPECIAL = /[.*+?^${}()|[\]\\]/g;

/** The words of a query to mark in a snippet: words of 2+ characters, Han runs as pairs, Korean without particles. */
export function terms(query) {
  const found = new Set();
  for (const word of query.toLowerCase().split(/[^\p{L}\p{N}_-]+/u)) {
    if (!word) continue;
    if (HAN_RUN.test(word)) {
      if (word.length === 1) found.add(word);
      for (let i = 0; i + 1 < word.length; i += 1) found.add(word.slice(i, i + 2));
    } else if (HANGUL_WORD.test(word)) {
      found.add(word);
      const particle = PARTICLES.find((p) => word.length > p.length + 1 && word.endsWith(p));
      if (particle) found.add(word.slice(0, -particle.length));
    } else if (word.length >= 2) {
      found.add(word);
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/** ``text`` as strings and <mark> elements around the query's words. */
export function marked(text, query) {
  const words = terms(query);
  if (!words.length) return [text];
  const pattern = new RegExp(words.map((w) => w.replace(SPECIAL, "\\$&")).join("|"), "giu");
  const parts = [];
  let cursor = 0;
  for (const match of text.matchAll(pattern)) {
    if (!match[0]) continue;
    if (match.index > cursor) parts.push(text.slice(cursor, match.index));
    parts.push(el("mark", {}, match[0]));
    cursor = match.index + match[0].length;
  }
  if (cursor < text.length) parts.push(text.slice(cursor));
  return parts;
}

function hitRow(hit, query, onOpen) {
  const item = { citation: hit.citation, heading_path: hit.heading_path, marker: null };
  return el(
    "li",
    { className: "search-hit" },
    el(
      "div",
      { className: "hit-head" },
      citationLink(item, place(hit.citation), onOpen, "source-place"),
      el("span", { className: "score" }, `score ${hit.score.toFixed(2)}`),
    ),
    hit.heading_path.length
      ? el("p", { className: "crumbs", lang: langProp(hit.heading_path.join(" ")) }, hit.heading_path.join(" › "))
      : null,
    el("p", { className: "snippet", lang: langProp(hit.snippet) }, marked(hit.snippet, query)),
  );
}

async function run(onOpen) {
  const query = byId("search-q").value.trim();
  if (!query) return;
  const mode = byId("search-mode").value;
  const glob = byId("search-path").value.trim();
  const params = new URLSearchParams({ q: query, mode, k: "10" });
  if (glob) params.set("path", glob);
  setText(byId("search-state"), "Searching…");
  try {
    const result = await getJSON(`/search?${params}`);
    fill(byId("hits"), result.hits.map((hit) => hitRow(hit, query, onOpen)));
    const count = result.hits.length;
    setText(
      byId("search-state"),
      count
        ? `${count} passage${count === 1 ? "" : "s"} · ${result.mode} · ${Math.round(result.took_ms)} ms`
        : `Nothing found${glob ? ` under ${glob}` : ""}.`,
    );
  } catch (error) {
    fill(byId("hits"));
    setText(byId("search-state"), `${error.message}${error.hint ? ` (${error.hint})` : ""}`);
  }
}

export function setupSearch({ onOpen }) {
  byId("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    run(onOpen);
  });
}
