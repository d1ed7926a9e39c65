// A page OCR read (a scanned PDF page, a photo), shown beside its text: the page image (GET
// /documents/{path}/pages/{n}.png, fetched like any request, with the token, and shown from a blob:
// URL), the cited lines' region boxed over it and the lines read with low confidence outlined (SVG
// rectangles in percentages of the page, so they scale with the image). The region is kb's own
// (kb_core.storage.regions.region_of): the box around the cited lines on the first page they reach.

import { checked, documentPath, request } from "./api.js";
import { el, fill, recentlyUsed, scrollToQuarter, svg } from "./dom.js";

const KEPT = 6; // page images kept (as blob: URLs) for opening again; a URL let go of is revoked
const images = recentlyUsed(KEPT, (url) => URL.revokeObjectURL(url));

/** Forget the page images fetched (after an upload or a delete). */
export function forgetPageImages() {
  images.clear();
}

async function pageImage(path, page) {
  const key = `${page}/${path}`;
  const kept = images.get(key);
  if (kept) return kept;
  const response = await checked(await request(`${documentPath(path)}/pages/${page}.png`));
  const blob = await response.blob();
  if (blob.type !== "image/png") throw new Error("the server did not send a PNG");
  const url = URL.createObjectURL(blob); // a blob: URL of the server's own PNG, never a URL from data
  images.set(key, url);
  return url;
}

/** The document's lines OCR read, by line number (a Map; empty for text not read by OCR). */
export function ocrLines(doc) {
  if (!doc.ocr) return new Map();
  if (!doc.ocrByLine) doc.ocrByLine = new Map(doc.ocr.lines.map((line) => [line.line, line]));
  return doc.ocrByLine;
}

/** The region of lines ``start``..``end``: {page, box, confidence, low}, or null when OCR read none of them. */
export function regionOf(doc, start, end) {
  if (!doc.ocr || start === null) return null;
  const chosen = doc.ocr.lines.filter((line) => start <= line.line && line.line <= end);
  if (!chosen.length) return null;
  const page = chosen[0].page;
  const onPage = chosen.filter((line) => line.page === page);
  const left = Math.min(...onPage.map((l) => l.box[0]));
  const top = Math.min(...onPage.map((l) => l.box[1]));
  const right = Math.max(...onPage.map((l) => l.box[0] + l.box[2]));
  const bottom = Math.max(...onPage.map((l) => l.box[1] + l.box[3]));
  const confidence = onPage.reduce((sum, line) => sum + line.confidence, 0) / onPage.length; // (the boxed lines')
  return { page, box: [left, top, right - left, bottom - top], confidence, low: confidence < doc.ocr.low_confidence };
}

/** The page to show for lines ``start``..``end`` (the region's; else ``shownPage`` or the first page OCR read), or null. */
export function pageToShow(doc, region, shownPage) {
  if (!doc.ocr || !doc.ocr.pages.length) return null;
  const read = (n) => doc.ocr.pages.some((p) => p[0] === n);
  if (region) return region.page;
  if (shownPage) return read(shownPage) ? shownPage : null;
  return doc.ocr.pages[0][0];
}

const percent = (value, whole) => `${((100 * value) / whole).toFixed(3)}%`;

function rect(box, width, height, className, title) {
  const [x, y, w, h] = box;
  const attributes = { x: percent(x, width), y: percent(y, height), width: percent(w, width), height: percent(h, height) };
  return svg("rect", { ...attributes, class: className }, title ? svg("title", {}, title) : null);
}

/** Words on the region: where it is and how sure OCR was. */
function caption(page, region, lowCount) {
  const parts = [`Page ${page} as scanned`];
  if (region) {
    const sure = region.confidence.toFixed(2);
    parts.push(region.low ? `the cited lines boxed: low OCR confidence ${sure}, check them against the page` : `the cited lines boxed (OCR confidence ${sure})`);
  }
  if (lowCount) parts.push(`${lowCount} line${lowCount === 1 ? "" : "s"} read with low confidence, dashed`);
  return parts.join(" · ");
}

/**
 * Show page ``page`` of ``doc`` in ``figure``, ``region`` (or null) boxed on it; ``current()`` says whether
 * this is still what the viewer opens (a later open wins). The image gets the class "loaded" once shown.
 */
export async function showScan(figure, doc, path, page, region, current) {
  const size = doc.ocr.pages.find((p) => p[0] === page);
  const [, width, height] = size;
  const low = doc.ocr.lines.filter((line) => line.page === page && line.low);
  const boxes = low.map((line) => rect(line.box, width, height, "low-line", `line ${line.line}: low OCR confidence ${line.confidence.toFixed(2)}`));
  const cited = region && region.page === page ? rect(region.box, width, height, region.low ? "region low" : "region") : null;
  const overlay = svg("svg", { class: "scan-overlay", "aria-hidden": "true", focusable: "false" }, boxes, cited);
  const image = el("img", { className: "scan-image", alt: `Page ${page} of ${path}, as scanned` });
  figure.hidden = false;
  figure.dataset.page = String(page);
  fill(figure, el("div", { className: "scan-page" }, image, overlay), el("figcaption", { className: "muted small" }, caption(page, region, low.length)));
  figure.scrollTop = 0;
  let url;
  try {
    url = await pageImage(path, page);
  } catch (error) {
    if (!current()) return;
    const hint = error.hint ? ` (${error.hint})` : "";
    fill(figure, el("p", { className: "error-text", role: "alert" }, `Cannot show page ${page}: ${error.message}${hint}`));
    return;
  }
  if (!current()) return;
  image.addEventListener(
    "load",
    () => {
      image.classList.add("loaded");
      scrollToQuarter(figure, overlay.querySelector(".region"));
    },
    { once: true },
  );
  image.src = url;
}

/** Hide the page image. */
export function hideScan(figure) {
  figure.hidden = true;
  delete figure.dataset.page;
  fill(figure);
}
