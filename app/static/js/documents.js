// The documents panel: the caller's collections with their documents, a new collection, files
// uploaded into one (a request a file, each with its progress and its own result: a refused
// file refuses the request it is in), a document or a collection deleted; and the start form's
// collection picker, drawn from the same list (docs/ui.md).
//
// Collection names, document titles and file names are user-supplied: set as text, never as
// HTML.

import { api, ApiError, upload } from "./api.js";

const $ = (id) => document.getElementById(id);
const COLLECTIONS_PAGE = 100;
const DOCUMENTS_PAGE = 100;
const ACCEPT = ".pdf,.docx,.html,.htm,.xhtml,.md,.markdown,.txt,.text,.rst,.csv,.log";

let collections = []; // the caller's collections, newest first (GET /collections)
let listing = 0; // the latest listing asked for: a slower earlier one must not replace it
const uploadLists = new Map(); // collection id → its uploads' list, kept across redraws

function el(tag, props = {}, ...children) {
  const element = Object.assign(document.createElement(tag), props);
  element.append(...children.filter((c) => c !== null && c !== undefined));
  return element;
}

// An error answer with its code (`collection_in_use`, `unsupported_type`, …) after its sentence.
function problem(e) {
  if (!(e instanceof ApiError)) return "the service is unreachable";
  return e.status ? `${e.message} (${e.code ?? e.status})` : e.message;
}

const collectionPath = (id) => `/collections/${encodeURIComponent(id)}`;
const plural = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** The ids of the collections ticked on the start form. */
export function pickedCollections() {
  return [...$("collection-picker").querySelectorAll("input:checked")].map((input) => input.value);
}

/** List the collections and their documents again (the panel and the picker). */
export async function loadCollections() {
  const token = ++listing;
  let page;
  try {
    page = (await api(`/collections?limit=${COLLECTIONS_PAGE}`)).data;
  } catch (e) {
    if (token === listing) showPanelError(e); // the panel is an extra: runs work without it
    return;
  }
  const details = await Promise.allSettled(
    page.collections.map((c) => api(`${collectionPath(c.collection_id)}?limit=${DOCUMENTS_PAGE}`)),
  );
  if (token !== listing) return;
  $("documents-error").hidden = true;
  collections = page.collections;
  drawPicker();
  $("collection-list").replaceChildren(...collections.map((c, i) => collectionItem(c, details[i])));
  $("documents-empty").hidden = collections.length > 0;
}

function showPanelError(e) {
  $("documents-error").textContent = problem(e);
  $("documents-error").hidden = false;
}

// -- the picker ----------------------------------------------------------------------------------
function drawPicker() {
  const picked = new Set(pickedCollections());
  $("collection-picker").hidden = collections.length === 0;
  $("picker-list").replaceChildren(
    ...collections.map((c) => {
      const box = el("input", { type: "checkbox", value: c.collection_id });
      box.checked = picked.has(c.collection_id);
      const name = el("span", { textContent: c.name });
      return el("label", { title: plural(c.document_count, "document") }, box, name);
    }),
  );
}

// -- the panel -----------------------------------------------------------------------------------
function collectionItem(c, detail) {
  const id = c.collection_id;
  const error = el("p", { className: "error", hidden: true, role: "alert" });
  const remove = el("button", {
    type: "button",
    className: "link delete-collection",
    textContent: "delete",
    title: "delete this collection with its documents",
  });
  remove.addEventListener("click", () => deleteCollection(c, error));
  const files = el("input", { type: "file", multiple: true, accept: ACCEPT, className: "upload-input" });
  files.addEventListener("change", () => {
    const chosen = [...files.files];
    files.value = ""; // the same file may be chosen again
    uploadFiles(id, chosen);
  });
  if (!uploadLists.has(id)) uploadLists.set(id, el("ol", { className: "uploads" }));
  const item = el(
    "li",
    { className: "collection" },
    el(
      "div",
      { className: "collection-head" },
      el("strong", { className: "collection-name", textContent: c.name }),
      el("span", { className: "muted", textContent: plural(c.document_count, "document") }),
      remove,
    ),
    el("label", { className: "upload" }, "add files ", files),
    uploadLists.get(id),
    documentList(c, detail, error),
    error,
  );
  item.dataset.collectionId = id;
  return item;
}

function documentList(c, detail, error) {
  const list = el("ol", { className: "docs" });
  if (detail.status === "rejected") {
    error.textContent = problem(detail.reason);
    error.hidden = false;
    return list;
  }
  const { documents, next_offset: more } = detail.value.data;
  list.append(...documents.map((doc) => documentItem(c, doc, error)));
  if (more !== null) {
    list.append(el("li", { className: "muted", textContent: `the newest ${documents.length} shown` }));
  }
  return list;
}

function documentItem(c, doc, error) {
  const status = el("span", { className: "badge doc-status", textContent: doc.status });
  status.dataset.status = doc.status;
  const remove = el("button", {
    type: "button",
    className: "link delete-document",
    textContent: "delete",
    title: "delete this document and its passages",
  });
  remove.addEventListener("click", () => deleteDocument(c, doc, error));
  const facts = [doc.name, doc.kind, plural(doc.pages, "page"), plural(doc.passages, "passage")].join(" · ");
  const item = el(
    "li",
    { className: "doc" },
    el("span", { className: "doc-title", textContent: doc.title }),
    el("span", { className: "doc-facts muted", textContent: facts }),
    el("span", { className: "doc-tail" }, status, remove),
  );
  item.dataset.documentId = doc.document_id;
  return item;
}

async function createCollection(event) {
  event.preventDefault();
  const name = $("collection-name").value.trim();
  if (!name) return;
  $("create-collection").disabled = true;
  try {
    await api("/collections", { method: "POST", body: { name } });
    $("collection-name").value = "";
    await loadCollections();
  } catch (e) {
    showPanelError(e);
  } finally {
    $("create-collection").disabled = false;
  }
}

async function deleteCollection(c, error) {
  if (!confirm(`Delete the collection “${c.name}” with its ${plural(c.document_count, "document")}?`)) return;
  try {
    await api(collectionPath(c.collection_id), { method: "DELETE" });
    uploadLists.delete(c.collection_id);
    await loadCollections();
  } catch (e) {
    // 409 collection_in_use: a run that has not ended searches it; nothing was deleted.
    error.textContent = problem(e);
    error.hidden = false;
  }
}

async function deleteDocument(c, doc, error) {
  if (!confirm(`Delete “${doc.title}” (${doc.name}) from “${c.name}”?`)) return;
  try {
    await api(`${collectionPath(c.collection_id)}/documents/${encodeURIComponent(doc.document_id)}`, {
      method: "DELETE",
    });
    await loadCollections();
  } catch (e) {
    error.textContent = problem(e);
    error.hidden = false;
  }
}

// -- uploads -------------------------------------------------------------------------------------
/** Upload `files` into collection `id` one after the other, each row showing how it goes. */
async function uploadFiles(id, files) {
  const list = uploadLists.get(id);
  for (const file of files) {
    const row = uploadRow(file.name);
    list.prepend(row.item);
    const form = new FormData();
    form.append("file", file, file.name);
    let doc;
    try {
      [doc] = (await upload(`${collectionPath(id)}/documents`, form, row.progress)).data.documents;
    } catch (e) {
      row.end("refused", `refused: ${problem(e)}`);
      continue;
    }
    if (doc.created) row.end("stored", "stored");
    else row.end("duplicate", `already there as “${doc.title}”`);
    await loadCollections(); // the document listed with its status
  }
}

function uploadRow(name) {
  const bar = el("progress", { max: 1, value: 0 });
  const state = el("span", { className: "upload-state", textContent: "uploading" });
  const label = el("span", { className: "upload-name", textContent: name });
  const item = el("li", { className: "upload-row" }, label, bar, state);
  item.dataset.state = "uploading";
  return {
    item,
    progress(sent, total) {
      bar.value = total ? sent / total : 0;
      const whole = total && sent >= total;
      state.textContent = whole ? "reading…" : `uploading ${Math.floor((100 * sent) / total)} %`;
      item.dataset.state = whole ? "reading" : "uploading";
    },
    end(kind, text) {
      bar.remove();
      state.textContent = text;
      item.dataset.state = kind;
    },
  };
}

/** Wire the panel's controls and list the collections once. */
export function initDocuments() {
  $("new-collection").addEventListener("submit", createCollection);
  $("refresh-collections").addEventListener("click", () => loadCollections());
  return loadCollections();
}
