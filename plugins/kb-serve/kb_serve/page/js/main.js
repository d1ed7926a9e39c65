// The page of kb serve: tabs (Ask, Search, Documents, History), the document viewer, and links
// inside the page (#/doc/PATH/Lstart-Lend opens a document at its lines; #/answer/ID a stored answer).

import { getJSON } from "./api.js";
import { setupAsk, showAnswer } from "./ask.js";
import { byId, docHref, setText } from "./dom.js";
import { refresh as refreshDocuments, setupDocuments } from "./documents.js";
import { loadAnswer, refreshHistory } from "./history.js";
import { setupSearch } from "./search.js";
import { closeDocument, openDocument, setupViewer } from "./viewer.js";

const TABS = ["ask", "search", "documents", "history"];
const DOC_LINK = /^#\/doc\/([^/]+)(?:\/L(\d+)-L(\d+))?$/;
const ANSWER_LINK = /^#\/answer\/([^/]+)$/;

function select(tab) {
  for (const name of TABS) {
    const chosen = name === tab;
    byId(`tab-${name}`).setAttribute("aria-selected", String(chosen));
    byId(`panel-${name}`).hidden = !chosen;
  }
  if (tab === "documents") refreshDocuments();
  if (tab === "history") refreshHistory(reopen);
  if (tab === "search") byId("search-q").focus();
  if (tab === "ask") byId("question").focus();
}

async function health() {
  try {
    const status = await getJSON("/health");
    const count = `${status.documents} document${status.documents === 1 ? "" : "s"}`;
    setText(byId("health"), `${count} · ${status.chunks} chunks · model: ${status.backend}${status.auth ? " · token" : ""}`);
  } catch (error) {
    setText(byId("health"), error.message);
  }
}

/** Open a citation (or a document from line 1) in the viewer, and make it the page's address. */
function openCitation(citation, headingPath) {
  const hash = docHref(citation.path, citation.start_line, citation.end_line);
  if (location.hash !== hash) history.pushState(null, "", hash);
  openDocument(citation.path, citation.start_line ?? null, citation.end_line ?? null, headingPath);
}

async function reopen(answerId) {
  const hash = `#/answer/${encodeURIComponent(answerId)}`;
  if (location.hash !== hash) history.pushState(null, "", hash);
  select("ask");
  try {
    showAnswer(await loadAnswer(answerId), { stored: true });
  } catch (error) {
    setText(byId("ask-state"), error.message);
  }
}

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

/** Follow the page's address (after a link, Back or Forward). */
function route() {
  const doc = DOC_LINK.exec(location.hash);
  if (doc) {
    const path = decode(doc[1]);
    if (path) openDocument(path, doc[2] ? Number(doc[2]) : null, doc[3] ? Number(doc[3]) : null);
    return;
  }
  const answer = ANSWER_LINK.exec(location.hash);
  if (answer && decode(answer[1])) {
    select("ask");
    loadAnswer(decode(answer[1])).then(
      (stored) => showAnswer(stored, { stored: true }),
      (error) => setText(byId("ask-state"), error.message),
    );
    return;
  }
  if (!byId("viewer").hidden) closeDocument();
}

function setup() {
  for (const name of TABS) byId(`tab-${name}`).addEventListener("click", () => select(name));
  setupViewer();
  setupAsk({ onOpen: openCitation });
  setupSearch({ onOpen: openCitation });
  setupDocuments({ onOpen: openCitation, onChange: health });
  // A file dropped anywhere else must not make the browser leave the page to show it.
  for (const event of ["dragover", "drop"]) window.addEventListener(event, (e) => e.preventDefault());
  window.addEventListener("popstate", route);
  window.addEventListener("hashchange", route);
  health();
  if (location.hash) route();
  byId("question").focus();
}

setup();
