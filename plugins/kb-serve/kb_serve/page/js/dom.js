// The one place the page turns data into DOM. Text always goes in as text nodes (node.append of a
// string, textContent); no HTML string is ever parsed: no innerHTML, outerHTML, insertAdjacentHTML
// or document.write anywhere in the page. An element's properties come from an allow-list, and a
// link may only point inside the page ("#..."), so no data can become a javascript: URL. The boxes
// drawn over a page image are SVG elements of three kinds, their attributes from an allow-list too.

import { PAGE_WORDS } from "./words.js";

const PROPERTIES = new Set([
  "className", "id", "type", "title", "lang", "hidden", "disabled", "tabIndex", "value",
  "placeholder", "name", "htmlFor", "checked", "multiple", "accept", "role", "dir", "alt",
]);
// The SVG namespace: a name, never fetched.
const SVG_NS = "http://www.w3.org/2000/svg";
const SVG_TAGS = new Set(["svg", "rect", "title"]);
const SVG_ATTRIBUTES = new Set(["x", "y", "width", "height", "class", "aria-hidden", "focusable"]);

/** A link target inside the page, or an error: data never becomes a URL of its own. */
function pageHref(value) {
  const href = String(value);
  if (!href.startsWith("#")) throw new Error(`only in-page links are made, not ${href.slice(0, 20)}`);
  return href;
}

// Characters that would change how the text around them is shown ("Trojan Source": bidi overrides,
// embeddings, isolates and marks reorder a line; C0 and C1 controls, line and paragraph separators)
// are shown escaped, as kb does on a terminal (kb_core.terminal): U+202E reads "\u202e". Tab and
// newline (and a carriage return, which a page does not act on) stay as they are.
const UNSAFE = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escaped(char) {
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** ``text`` with every character that could reorder or hide what is shown escaped visibly (``\u202e``). */
export function inert(text) {
  return String(text ?? "").replace(UNSAFE, escaped);
}

/** Append children (nodes, or strings as text nodes, made inert(); null, undefined and false are skipped). */
export function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : inert(child));
  }
  return node;
}

/**
 * A new element: el("a", {href: "#/doc/x", className: "cite", on: {click}}, "[#1]").
 * ``data`` sets data-* attributes, ``aria`` aria-* ones, ``on`` event listeners.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "href") node.setAttribute("href", pageHref(value));
    else if (key === "on") for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    else if (key === "data") for (const [name, item] of Object.entries(value)) node.dataset[name] = String(item);
    else if (key === "aria") for (const [name, item] of Object.entries(value)) node.setAttribute(`aria-${name}`, String(item));
    else if (PROPERTIES.has(key)) node[key] = value;
    else throw new Error(`el: the property ${key} is not allowed`);
  }
  return append(node, children);
}

/** A new SVG element (svg, rect or title): svg("rect", {x: "10%", class: "region"}); children as for el(). */
export function svg(tag, attributes = {}, ...children) {
  if (!SVG_TAGS.has(tag)) throw new Error(`svg: the element ${tag} is not made`);
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (!SVG_ATTRIBUTES.has(key)) throw new Error(`svg: the attribute ${key} is not allowed`);
    node.setAttribute(key, String(value));
  }
  return append(node, children);
}

/** Replace a node's children with ``children``. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** Set a node's text (its children become one text node, made inert()). */
export function setText(node, text) {
  node.textContent = inert(text);
}

/** The element with this id (it must exist: the page's own markup). */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`no element #${id}`);
  return node;
}

const HANGUL = /[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]/;
const KANA = /[\u3040-\u30ff]/;
const HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/;

/** The language tag of a text in Korean, Japanese or Chinese script (for wrapping and fonts), else "". */
export function langOf(text) {
  const sample = String(text ?? "").slice(0, 4000);
  if (HANGUL.test(sample)) return "ko";
  if (KANA.test(sample)) return "ja";
  if (HAN.test(sample)) return "zh";
  return "";
}

/** Give ``node`` the language of ``text``'s script, or none of its own (it inherits the page's). */
export function setLang(node, lang) {
  if (lang) node.lang = lang;
  else node.removeAttribute("lang");
}

/** ``lang`` for el(): the script's language, or undefined (inherit the page's). */
export function langProp(text) {
  return langOf(text) || undefined;
}

/**
 * A cache of at most ``size`` entries that forgets the one used least recently first:
 * ``get(key)`` (undefined when it is not kept), ``set(key, value)`` and ``clear()``.
 * ``forget(value)`` is called for every value it lets go of (to release what it holds).
 */
export function recentlyUsed(size, forget = () => {}) {
  const entries = new Map();
  return {
    get(key) {
      if (!entries.has(key)) return undefined;
      const value = entries.get(key);
      entries.delete(key);
      entries.set(key, value);
      return value;
    },
    set(key, value) {
      entries.set(key, value);
      while (entries.size > size) {
        const [oldest, old] = entries.entries().next().value;
        entries.delete(oldest);
        forget(old);
      }
    },
    clear() {
      for (const value of entries.values()) forget(value);
      entries.clear();
    },
  };
}

/** Scroll ``box`` by as much as puts ``target`` (an element inside it; none: no scroll) a quarter of the way down it. */
export function scrollToQuarter(box, target) {
  if (target) box.scrollTop += target.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientHeight / 4;
}

/** A number of bytes in words. */
export function bytes(count) {
  if (count < 1024) return `${count} B`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KB`;
  return `${(count / 1024 / 1024).toFixed(1)} MB`;
}

/** The page's link to lines ``start``..``end`` of a stored document. */
export function docHref(path, start, end) {
  const lines = start ? `/L${start}-L${end || start}` : "";
  return `#/doc/${encodeURIComponent(path)}${lines}`;
}

/** A citation's place as people read it: "notes/a.md, lines 3–6". */
export function place(citation) {
  const { path, start_line: start, end_line: end } = citation;
  const words = PAGE_WORDS.words; // kb_core.service.words.place, as kb serve sends it
  const template = start === end ? words.line : words.lines;
  return template.replace(/\{(\w+)\}/g, (_, key) => String({ path, start, end }[key]));
}
