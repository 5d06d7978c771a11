// Model text (answers, candidate answers) rendered as Markdown, made inert. Everything the
// models write is untrusted: it may quote a web page written to attack whoever reads it.
//
// Markdown becomes HTML (marked), then DOMPurify keeps only an explicit allow-list: text
// structure, emphasis, code, lists, tables and links. Gone are forms, inputs, buttons,
// dialogs, frames, media, styles, classes, ids and names (an answer must not be able to
// spoof the page's own controls, such as its API key prompt, or clobber its element ids).
// Links keep only absolute http(s) and mailto addresses and open in a new tab without a
// referrer. Images are never loaded: a Markdown image becomes a link to it, an HTML <img> is
// dropped (the page's Content-Security-Policy would block a remote one anyway).

import DOMPurify from "../vendor/dompurify.js";
import { Marked } from "../vendor/marked.js";

export const ALLOWED_TAGS = [
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6",
  "strong", "em", "del", "s", "sub", "sup", "code", "pre", "kbd", "blockquote",
  "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
];
export const ALLOWED_ATTR = ["href", "title", "align", "start"];
const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;

const PURIFY = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  ALLOWED_URI_REGEXP: SAFE_URL,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
};

const escape = (text) =>
  String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// A Markdown image: a link to it, named by its alt text, instead of a request to its host.
const parser = new Marked({
  async: false,
  renderer: {
    image({ href, text }) {
      return `<a href="${escape(href)}">image: ${escape(text || href)}</a>`;
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (element) => {
  if (element.tagName === "A") {
    element.setAttribute("target", "_blank");
    element.setAttribute("rel", "noopener noreferrer");
  }
});

/** Markdown `text` as sanitised HTML, safe to assign to `innerHTML`. */
export function markdown(text) {
  return DOMPurify.sanitize(parser.parse(text ?? ""), PURIFY);
}
