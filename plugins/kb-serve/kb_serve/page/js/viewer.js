// The document viewer: a stored document's lines (GET /documents/{path}), the cited range
// highlighted and scrolled to, with its heading path. A PDF shows the page the lines are on. A page
// OCR read shows its image beside its text, the cited region boxed, low-confidence lines marked.

import { documentPath, getJSON, pathProblem } from "./api.js";
import { byId, el, fill, inert, langOf, recentlyUsed, scrollToQuarter, setLang, setText } from "./dom.js";
import { forgetPageImages, hideScan, ocrLines, pageToShow, regionOf, showScan } from "./scan.js";

const CACHE_SIZE = 8;
const GAP_LINES = 3; // a run of this many lines no chunk covers is shown as one row
const cache = recentlyUsed(CACHE_SIZE);
let opening = 0;

async function load(path) {
  const kept = cache.get(path);
  if (kept) return kept;
  const doc = await getJSON(documentPath(path));
  cache.set(path, doc);
  return doc;
}

/** The stored text of the document at ``path`` (document_text.v1), kept for the next few asked. */
export function documentText(path) {
  return load(path);
}

/**
 * Light a computation's operands in the viewer, when it shows ``path`` (else nothing): ``marks`` are
 * {n, places}, a line and where its numbers are written in its text ([start, end, ...]); the lines lit before go out.
 */
export function lightLines(path, marks) {
  const viewer = byId("viewer");
  if (viewer.hidden || viewer.dataset.path !== path) return;
  const box = byId("viewer-lines");
  for (const row of box.querySelectorAll(".line.operand")) {
    row.classList.remove("operand");
    row.replaceChildren(row.textContent);
  }
  for (const { n, places } of marks) {
    const row = box.querySelector(`.line[data-n="${Number(n)}"]`);
    if (!row) continue;
    const text = row.textContent;
    const parts = [];
    let cursor = 0;
    for (const [start, end] of places) {
      if (start < cursor || end > text.length) continue;
      parts.push(text.slice(cursor, start), el("mark", { className: "operand-number" }, text.slice(start, end)));
      cursor = end;
    }
    parts.push(text.slice(cursor));
    row.classList.add("operand");
    fill(row, parts);
  }
}

/** Forget the stored text of documents (after an upload or a delete). */
export function forgetDocuments() {
  cache.clear();
  forgetPageImages();
}

function headingAt(doc, line) {
  const section = doc.sections.find((s) => s.start_line <= line && line <= s.end_line);
  return section ? section.heading_path : [];
}

/** The lines to show: the whole document, or for a paged one the page that holds ``start``. */
function shownRange(doc, start) {
  const last = doc.line_count;
  if (!doc.pages.length || !start) return { from: 1, to: last, page: null };
  let page = 0;
  while (page < doc.pages.length && doc.pages[page] <= start) page += 1;
  if (page === 0) return { from: 1, to: doc.pages[0] - 1, page: null };
  const to = page < doc.pages.length ? doc.pages[page] - 1 : last;
  return { from: doc.pages[page - 1], to, page };
}

// One element per line, its number drawn by CSS (from data-n), in blocks of BLOCK_LINES that the
// browser lays out only when they come into view (content-visibility: auto): a 5,000-line document
// opens at its cited lines in a few tens of milliseconds instead of laying out every line first.
const BLOCK_LINES = 100;

function lineRow(number, text, hit, ocr) {
  const row = document.createElement("div");
  row.className = hit ? "line cited" : "line";
  row.dataset.n = String(number);
  if (ocr && ocr.low) {
    // marked in words (title) and on the screen (CSS shows "low OCR" and the confidence after the text)
    const sure = ocr.confidence.toFixed(2);
    row.classList.add("low");
    row.dataset.confidence = sure;
    row.title = `low OCR confidence ${sure}`;
  }
  row.append(inert(text));
  return row;
}

/** ``rows`` grouped into blocks the browser may skip laying out while they are off screen. */
function blocks(rows) {
  const out = document.createDocumentFragment();
  for (let i = 0; i < rows.length; i += BLOCK_LINES) {
    const block = document.createElement("div");
    block.className = "lines";
    block.append(...rows.slice(i, i + BLOCK_LINES));
    out.append(block);
  }
  return out;
}

function documentLang(doc) {
  if (doc.lang) return doc.lang;
  let sample = "";
  for (const line of doc.lines) {
    if (line) sample += line;
    if (sample.length > 2000) break;
  }
  return langOf(sample) || "";
}

function renderLines(doc, range, start, end) {
  const rows = [];
  const hit = (n) => start !== null && start <= n && n <= end;
  const ocr = ocrLines(doc);
  let n = range.from;
  while (n <= range.to) {
    const text = doc.lines[n - 1];
    if (text !== null && text !== undefined) {
      rows.push(lineRow(n, text, hit(n), ocr.get(n)));
      n += 1;
      continue;
    }
    let last = n;
    while (last < range.to && (doc.lines[last] === null || doc.lines[last] === undefined)) last += 1;
    const cited = start !== null && start <= last && n <= end;
    if (last - n + 1 >= GAP_LINES && !cited) {
      rows.push(el("div", { className: "gap" }, `lines ${n}–${last}: not kept in the store (front matter, markup or blank lines)`));
    } else {
      for (let k = n; k <= last; k += 1) rows.push(lineRow(k, "", hit(k), ocr.get(k)));
    }
    n = last + 1;
  }
  return blocks(rows);
}

function where(doc, range, start, end) {
  const parts = [];
  if (range.page) parts.push(`page ${range.page} of ${doc.pages.length}`);
  if (start !== null) parts.push(start === end ? `line ${start}` : `lines ${start}–${end}`);
  parts.push(`${doc.line_count} lines in all`);
  return parts.join(" · ");
}

/**
 * Open ``path`` with lines ``start``..``end`` highlighted (null: none) and scrolled to;
 * ``headingPath``: the citation's, else the one of the section holding ``start``.
 */
export async function openDocument(path, start = null, end = null, headingPath = null) {
  performance.mark("kb:open-start");
  const mine = ++opening;
  const viewer = byId("viewer");
  viewer.hidden = false;
  byId("layout").classList.add("with-viewer");
  setText(byId("viewer-path"), path);
  setLang(byId("viewer-path"), langOf(path));
  setText(byId("viewer-heading"), "");
  setText(byId("viewer-where"), "Opening…");
  byId("viewer-note").hidden = true;
  const box = byId("viewer-lines");
  const refused = pathProblem(path);
  if (refused) {
    // a crafted address (#/doc/..%2F..%2Fhealth) is not a document: nothing is fetched for it
    showPage(null);
    setText(byId("viewer-where"), "");
    fill(box, el("p", { className: "error-text", role: "alert" }, `Cannot open ${path}: ${refused}.`));
    return;
  }
  let doc;
  try {
    doc = await load(path);
  } catch (error) {
    if (mine !== opening) return;
    showPage(null);
    setText(byId("viewer-where"), "");
    fill(box, el("p", { className: "error-text", role: "alert" }, `Cannot open ${path}: ${error.message}`));
    return;
  }
  if (mine !== opening) return;
  const first = start === null ? null : Math.max(1, Math.min(start, doc.line_count));
  const last = first === null ? null : Math.max(first, Math.min(end ?? first, doc.line_count));
  const range = shownRange(doc, first);
  const heading = headingPath && headingPath.length ? headingPath : first === null ? [] : headingAt(doc, first);
  setText(byId("viewer-path"), doc.title && doc.title !== path ? `${doc.title} — ${path}` : path);
  setText(byId("viewer-heading"), heading.join(" › "));
  setLang(byId("viewer-heading"), langOf(heading.join(" ")));
  setText(byId("viewer-where"), where(doc, range, first, last));
  const note = byId("viewer-note");
  note.hidden = doc.exact;
  setText(note, doc.exact ? "" : "The text kb keeps for this document, placed at the lines it came from; the file's own line breaks and markup may differ.");
  setLang(box, documentLang(doc));
  fill(box, renderLines(doc, range, first, last));
  const region = regionOf(doc, first, last);
  const page = pageToShow(doc, region, first === null ? null : range.page);
  showPage(page && { doc, path, page, region, current: () => mine === opening });
  box.scrollTop = 0;
  scrollToQuarter(box, box.querySelector(".line.cited"));
  viewer.dataset.path = path;
  // measured to the next frame: the cited lines are on the screen
  requestAnimationFrame(() =>
    setTimeout(() => {
      performance.measure("kb:open", "kb:open-start");
      if (mine === opening) viewer.dataset.ready = String(mine);
    }, 0),
  );
}

/** Show a page OCR read beside the text (``shown``: {doc, path, page, region, current}), or none (null). */
function showPage(shown) {
  const figure = byId("viewer-scan");
  byId("viewer").classList.toggle("with-scan", Boolean(shown));
  if (!shown) hideScan(figure);
  else showScan(figure, shown.doc, shown.path, shown.page, shown.region, shown.current);
}

/** Close the viewer. */
export function closeDocument() {
  byId("viewer").hidden = true;
  byId("layout").classList.remove("with-viewer");
  if (location.hash.startsWith("#/doc/")) history.replaceState(null, "", location.pathname + location.search);
}

export function setupViewer() {
  byId("viewer-close").addEventListener("click", closeDocument);
}
