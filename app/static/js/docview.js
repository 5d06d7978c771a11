// A document a citation names, shown in the page: a source whose URL is exactly
// /collections/<id>/documents/<id>(#page=N) (what the `documents` tool cites) is a same-origin
// link, and a click on it opens the document's card instead of the service's JSON: the
// document's record (GET /collections/{c}/documents/{d}) and the cited page's passages
// (GET …/pages/{n}), the cited quotes marked. Should the page not be readable (the document
// deleted since), the card shows what the run read of it (its evidence, GET /runs/{id}).
//
// Titles, file names and passages are user-supplied: set as text, never as HTML.

import { api, ApiError } from "./api.js";

const $ = (id) => document.getElementById(id);

/** The only relative source URL the page links to (ids as the service makes them). */
export const DOCUMENT_URL =
  /^\/collections\/([A-Za-z0-9_-]{1,64})\/documents\/([A-Za-z0-9_-]{1,64})(?:#page=([1-9][0-9]{0,5}))?$/;

/** The collection, document and page (null without one) a source URL names, or null. */
export function documentPlace(url) {
  const match = DOCUMENT_URL.exec(url ?? "");
  if (!match) return null;
  return { collectionId: match[1], documentId: match[2], page: match[3] ? Number(match[3]) : null };
}

/** A source's link to its document's card, or null when the URL is not a document's. */
export function documentLink({ title, url }) {
  if (!documentPlace(url)) return null;
  return Object.assign(document.createElement("a"), {
    href: url,
    className: "doc-link",
    textContent: title || url,
    title: "show the cited page of this document",
  });
}

function el(tag, props = {}, ...children) {
  const element = Object.assign(document.createElement(tag), props);
  element.append(...children.filter((c) => c !== null && c !== undefined));
  return element;
}

/**
 * Open a document link's card on a click inside `root`; `openRun()` gives the open run
 * (model.js), whose citations name the quotes to mark.
 */
export function watchDocumentLinks(root, openRun) {
  root.addEventListener("click", (event) => {
    const link = event.target.closest?.("a.doc-link");
    if (!link) return;
    event.preventDefault(); // the address answers JSON (and needs the key): show it here
    const url = link.getAttribute("href");
    const run = openRun();
    const quotes = (run?.citations ?? []).filter((c) => c.source?.url === url).map((c) => c.quote);
    showDocument(url, run?.id ?? null, quotes);
  });
  $("doc-close").addEventListener("click", closeDocument);
}

let shown = 0; // the latest card asked for: a slower earlier answer must not replace it

export function closeDocument() {
  shown += 1;
  $("doc-card").hidden = true;
}

/** The card of the document `url` names, with what run `runId` read of its page. */
async function showDocument(url, runId, quotes) {
  const place = documentPlace(url);
  if (!place) return;
  const token = ++shown;
  const card = $("doc-card");
  card.hidden = false;
  $("doc-title").textContent = place.page ? `Document, p. ${place.page}` : "Document";
  $("doc-facts").replaceChildren();
  $("doc-passages").replaceChildren();
  $("doc-passages-title").hidden = true;
  $("doc-error").hidden = true;
  $("doc-note").textContent = "loading…";
  card.scrollIntoView({ block: "nearest" });

  const path = `/collections/${place.collectionId}/documents/${place.documentId}`;
  const [doc, page, read] = await Promise.allSettled([
    api(path),
    api(`${path}/pages/${place.page ?? 1}`),
    runId ? api(`/runs/${encodeURIComponent(runId)}`) : Promise.resolve(null),
  ]);
  if (token !== shown) return;
  if (doc.status === "fulfilled") drawRecord(doc.value.data, place);
  else showError(doc.reason);
  if (page.status === "fulfilled") {
    drawPage(page.value.data.passages.map((passage) => passage.text), quotes, place);
    return;
  }
  const passages = read.status === "fulfilled" && read.value ? readPassages(read.value.data, url) : [];
  drawPassages(passages, quotes, place);
}

function drawPage(texts, quotes, place) {
  const where = place.page ? `page ${place.page}` : "the document";
  $("doc-passages-title").hidden = false;
  $("doc-passages-title").textContent = place.page ? `Page ${place.page}` : "Its text";
  $("doc-passages").replaceChildren(...texts.map((text) => el("li", {}, ...marked(text, quotes))));
  $("doc-note").textContent = texts.length
    ? `The whole of ${where} as stored and searched, the cited quotes marked.`
    : `Nothing of ${where} was stored.`;
}

function showError(error) {
  const known = error instanceof ApiError && error.status === 404;
  $("doc-error").textContent = known
    ? "This document is no longer in its collection (deleted, or another key's)."
    : error instanceof ApiError
      ? error.message
      : "the service is unreachable";
  $("doc-error").hidden = false;
}

function drawRecord(doc, place) {
  $("doc-title").textContent = place.page ? `${doc.title}, p. ${place.page}` : doc.title;
  const rows = [
    ["page", place.page ? `${place.page} of ${doc.pages}` : `${doc.pages} page(s)`],
    ["file", doc.name],
    ["kind", doc.kind],
    ["passages", String(doc.passages)],
    ["status", doc.status],
  ];
  $("doc-facts").replaceChildren(
    ...rows.flatMap(([term, value]) => [el("dt", { textContent: term }), el("dd", { textContent: value })]),
  );
}

/** The texts the run read from exactly this document and page (its nodes' evidence), once each. */
function readPassages(runRecord, url) {
  const texts = [];
  for (const node of runRecord?.nodes ?? []) {
    for (const item of node.evidence ?? []) {
      if (item.source?.url === url && item.text && !texts.includes(item.text)) texts.push(item.text);
    }
  }
  return texts;
}

function drawPassages(passages, quotes, place) {
  const where = place.page ? `page ${place.page}` : "this document";
  $("doc-passages-title").hidden = passages.length === 0;
  $("doc-passages-title").textContent = `What the run read of ${where}`;
  $("doc-passages").replaceChildren(...passages.map((text) => el("li", {}, ...marked(text, quotes))));
  $("doc-note").textContent = passages.length
    ? "The passages this run read, its cited quotes marked (the service shows no page whole)."
    : `This run read nothing of ${where}.`;
}

/** `text` as text nodes, each quote found in it verbatim wrapped in <mark>. */
function marked(text, quotes) {
  const spans = [];
  for (const quote of quotes) {
    const at = quote ? text.indexOf(quote) : -1;
    const end = at + (quote?.length ?? 0);
    if (at >= 0 && !spans.some(([s, e]) => at < e && s < end)) spans.push([at, end]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const parts = [];
  let from = 0;
  for (const [start, end] of spans) {
    parts.push(document.createTextNode(text.slice(from, start)));
    parts.push(el("mark", { className: "quote", textContent: text.slice(start, end) }));
    from = end;
  }
  parts.push(document.createTextNode(text.slice(from)));
  return parts;
}
