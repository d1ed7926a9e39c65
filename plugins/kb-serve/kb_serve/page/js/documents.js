// Documents: the stored documents (filter, open, delete after a confirmation), and uploads by
// choosing or dropping files, with what the ingest did to each file.

import { documentPath, getJSON } from "./api.js";
import { byId, bytes, el, fill, langProp, setText } from "./dom.js";
import { forgetDocuments } from "./viewer.js";

let documents = [];
let hooks = { onOpen: () => {}, onChange: () => {} };

function matches(doc, filter) {
  if (!filter) return true;
  const needle = filter.toLowerCase();
  return doc.path.toLowerCase().includes(needle) || (doc.title || "").toLowerCase().includes(needle);
}

function confirmDelete(row, doc) {
  const cancel = () => fill(actions, deleteButton());
  const yes = el("button", { type: "button", className: "danger", on: { click: () => remove(doc, row) } }, "Delete");
  const no = el("button", { type: "button", on: { click: cancel } }, "Keep");
  const actions = row.querySelector(".actions");
  fill(actions, el("span", { className: "confirm" }, `Delete ${doc.path}?`), " ", yes, " ", no);
  no.focus();

  function deleteButton() {
    return el("button", { type: "button", className: "quiet", on: { click: () => confirmDelete(row, doc) } }, "Delete…");
  }
}

async function remove(doc, row) {
  const actions = row.querySelector(".actions");
  fill(actions, el("span", { className: "muted" }, "Deleting…"));
  try {
    const result = await getJSON(documentPath(doc.path), { method: "DELETE" });
    forgetDocuments();
    fill(byId("upload-report"), el("p", { className: "ok-text" }, `Deleted ${result.removed.join(", ")}.`));
    await refresh();
    hooks.onChange();
  } catch (error) {
    fill(actions, el("span", { className: "error-text" }, error.message));
  }
}

function documentRow(doc) {
  const row = el(
    "li",
    { className: "document", data: { path: doc.path } },
    el(
      "div",
      { className: "doc-main" },
      el(
        "a",
        {
          href: `#/doc/${encodeURIComponent(doc.path)}`,
          className: "doc-path",
          lang: langProp(doc.path),
          on: {
            click(event) {
              event.preventDefault();
              hooks.onOpen({ path: doc.path, start_line: null, end_line: null }, []);
            },
          },
        },
        doc.path,
      ),
      doc.title && doc.title !== doc.path ? el("span", { className: "doc-title", lang: langProp(doc.title) }, doc.title) : null,
      el("span", { className: "muted small" }, `${doc.parser} · ${bytes(doc.size)} · ${doc.chunk_count} chunk${doc.chunk_count === 1 ? "" : "s"}`),
    ),
    el("div", { className: "actions" }),
  );
  fill(
    row.querySelector(".actions"),
    el("button", { type: "button", className: "quiet", on: { click: () => confirmDelete(row, doc) } }, "Delete…"),
  );
  return row;
}

function show() {
  const filter = byId("doc-filter").value.trim();
  const shown = documents.filter((doc) => matches(doc, filter));
  fill(byId("doc-list"), shown.map(documentRow));
  setText(byId("doc-count"), filter ? `${shown.length} of ${documents.length} documents` : `${documents.length} documents`);
}

/** Load the list of documents again. */
export async function refresh() {
  try {
    documents = (await getJSON("/documents")).documents;
    show();
  } catch (error) {
    setText(byId("doc-count"), error.message);
  }
}

/** What the ingest did to each uploaded file, in words. */
function reportRows(files, report) {
  const failed = new Map(report.failed.map((f) => [f.path.split("/").pop(), f.reason]));
  const warned = new Map(report.warnings.map((w) => [w.path.split("/").pop(), w.reason]));
  const added = new Set(report.added.map((p) => p.split("/").pop()));
  const updated = new Set(report.updated.map((p) => p.split("/").pop()));
  return files.map((file) => {
    const name = file.name;
    let outcome = "unchanged (already stored as it is)";
    let kind = "same";
    if (failed.has(name)) [outcome, kind] = [`not ingested: ${failed.get(name)}`, "failed"];
    else if (added.has(name)) [outcome, kind] = ["added", "added"];
    else if (updated.has(name)) [outcome, kind] = ["updated", "added"];
    return el(
      "li",
      { className: `upload ${kind}` },
      el("span", { className: "upload-name", lang: langProp(name) }, name),
      " ",
      el("span", { className: "outcome" }, outcome),
      warned.has(name) ? el("span", { className: "muted small" }, ` (${warned.get(name)})`) : null,
    );
  });
}

/** Upload ``files`` (a FileList or array) and show the report. */
export async function upload(files) {
  const list = [...files];
  if (!list.length) return;
  const form = new FormData();
  for (const file of list) form.append("file", file, file.name);
  const box = byId("upload-report");
  fill(box, el("p", { className: "muted" }, `Uploading ${list.length} file${list.length === 1 ? "" : "s"} and ingesting…`));
  try {
    const report = await getJSON("/documents", { method: "POST", form });
    forgetDocuments();
    fill(
      box,
      el("ul", { className: "uploads" }, reportRows(list, report)),
      el("p", { className: "muted small" }, `${report.documents} documents, ${report.chunks} chunks in the knowledge base.`),
    );
    await refresh();
    hooks.onChange();
  } catch (error) {
    fill(box, el("p", { className: "error-text", role: "alert" }, `${error.message}${error.hint ? ` (${error.hint})` : ""}`));
  }
}

export function setupDocuments({ onOpen, onChange }) {
  hooks = { onOpen, onChange };
  byId("doc-filter").addEventListener("input", show);
  const input = byId("upload-input");
  input.addEventListener("change", () => {
    upload(input.files).finally(() => {
      input.value = "";
    });
  });
  const drop = byId("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    upload(event.dataTransfer.files);
  });
}
