// The side panel: stop reason, costs, the answer (Markdown, made inert by untrusted.js) and one
// node's details. Every other model text is set as text, never as HTML.

import { documentLink } from "./docview.js";
import { countByStatus } from "./model.js";
// Also the controls of an open run: the plan review of a run waiting for approval and the
// steering buttons of a node.
import { MEANING, nodeValue } from "./tree.js";
import { markdown } from "./untrusted.js";

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const element = Object.assign(document.createElement(tag), props);
  element.append(...children.filter((c) => c !== null && c !== undefined));
  return element;
}

function link({ title, url }) {
  // Only web links and the exact address of a cited document (docview.js): a source's URL
  // comes from a tool result.
  const cited = documentLink({ title, url });
  if (cited) return cited;
  if (!/^https?:\/\//i.test(url)) return el("span", { textContent: title || url });
  return el("a", { href: url, textContent: title || url, target: "_blank", rel: "noopener noreferrer" });
}

function facts(container, rows) {
  container.replaceChildren(
    ...rows.flatMap(([term, value, key, hint]) => [
      el("dt", { textContent: term, ...(hint ? { title: hint } : {}) }),
      el("dd", { textContent: value, ...(key ? { id: key } : {}) }),
    ]),
  );
}

const OPEN = new Set(["queued", "running", "interrupted"]); // a run that takes commands
let shownPlan = null;

// The plan waiting for approval, as editable lines (filled once per wait: a redraw must not
// undo the reader's edits).
function drawPlanReview(run) {
  $("plan-review").hidden = !run.waitingPlan;
  if (run.waitingPlan === shownPlan) return;
  shownPlan = run.waitingPlan;
  $("plan-steps").value = (run.waitingPlan ?? []).join("\n");
}

/** The steps of the reviewed plan, and whether they differ from the plan as made. */
export function reviewedPlan(run) {
  const steps = $("plan-steps").value.split("\n").map((s) => s.trim()).filter(Boolean);
  const same = steps.length === run.waitingPlan.length && steps.every((s, i) => s === run.waitingPlan[i]);
  return { steps, edited: !same };
}

// What a caller may do to a node of an open run (docs/integrations.md, live steering).
function drawSteer(run, node) {
  const open = OPEN.has(run.status);
  $("node-steer").hidden = !open;
  if (!open) return;
  $("steer-prune").disabled = node.status === "pruned" || node.answer !== null;
  $("steer-boost").disabled = node.status !== "pending";
  $("steer-add-button").disabled = node.status !== "done";
  $("steer-step").disabled = node.status !== "done";
}

export const seconds = (s) => `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;

export function drawPanel(run, now) {
  $("side").hidden = false;
  $("run-head").hidden = false;
  const status = $("run-status");
  status.textContent = run.status;
  status.dataset.status = run.status;
  $("run-task").textContent = run.task;
  $("cancel").disabled = !OPEN.has(run.status);
  drawPlanReview(run);
  $("stop-reason").textContent = run.stopReason ?? "—";
  $("run-error").hidden = !run.error;
  $("run-error").textContent = run.error ? `${run.error.message} (${run.error.code})` : "";
  drawCosts(run, now);
  drawAnswer(run);
}

function drawCosts(run, now) {
  const m = run.metrics ?? {};
  const end = run.endedAt ?? now;
  const wall = m.wall_s ?? (run.startedAt ? Math.max(0, (end - run.startedAt) / 1000) : 0);
  const byStatus = Object.entries(countByStatus(run))
    .map(([status, n]) => `${n} ${status}`)
    .join(", ");
  const rows = [["wall time", seconds(wall), "cost-wall"]];
  // Model calls and tokens are the engine's counts, carried by progress events and the
  // terminal one; before the first of them the panel shows what the events tell.
  if (m.llm_calls !== undefined) {
    const roles = Object.entries(m.llm_calls_by_role ?? {})
      .map(([role, n]) => `${role} ${n}`)
      .join(", ");
    rows.push(["model calls", `${m.llm_calls}${roles ? ` (${roles})` : ""}`, "cost-calls"]);
    rows.push(["tokens", `${m.input_tokens ?? 0} in, ${m.output_tokens ?? 0} out`, "cost-tokens"]);
    if (m.cache_hits !== undefined) rows.push(["cache hits", String(m.cache_hits), "cost-cache"]);
  } else {
    rows.push(["model calls", "—", "cost-calls"]);
  }
  const toolErrors = m.tool_errors ?? run.toolErrors;
  const tools = `${m.tool_calls ?? run.toolCalls}${toolErrors ? ` (${toolErrors} failed)` : ""}`;
  rows.push(["tool calls", tools, "cost-tools"]);
  rows.push(["nodes", `${run.nodes.size}${byStatus ? ` (${byStatus})` : ""}`, "cost-nodes"]);
  rows.push(["paths answered", String(m.paths_completed ?? run.pathsCompleted), "cost-paths"]);
  facts($("costs"), rows);
}

let shownAnswer = null;

function drawAnswer(run) {
  $("answer-card").hidden = run.answer === null;
  $("answer-provisional").hidden = !run.provisional;
  if (run.answer === shownAnswer) return; // re-parse only when it changes
  shownAnswer = run.answer;
  const answer = $("answer");
  answer.innerHTML = markdown(run.answer);
  cite(answer, run.citations, run.unsupported);
  drawGrounding(run);
  $("answer-partial").hidden = !run.partial;
  $("answer-sources-title").hidden = run.sources.length === 0;
  $("answer-sources").replaceChildren(...run.sources.map((s) => el("li", {}, link(s))));
}

// Text nodes of the rendered answer, outside links and code.
function textNodes(root) {
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("a, code, pre") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  while (walker.nextNode()) found.push(walker.currentNode);
  return found;
}

/**
 * The answer's verified citations made readable where they stand: each marker `[n]` becomes
 * a button that opens its quote and source beside it, and each sentence no verified quote
 * backs is marked. Everything is built with text nodes: a quote is never parsed as HTML.
 */
function cite(root, citations, unsupported) {
  const byMarker = new Map();
  for (const c of citations ?? []) {
    if (!byMarker.has(c.marker)) byMarker.set(c.marker, []);
    byMarker.get(c.marker).push(c);
  }
  for (const text of textNodes(root)) {
    const parts = text.data.split(/(\[\d{1,6}\])/);
    if (parts.length === 1) continue;
    const pieces = parts.map((part) => {
      const marker = /^\[(\d{1,6})\]$/.exec(part);
      const quotes = marker ? byMarker.get(Number(marker[1])) : undefined;
      return quotes ? citeButton(Number(marker[1]), quotes) : document.createTextNode(part);
    });
    text.replaceWith(...pieces);
  }
  for (const sentence of unsupported ?? []) markUnsupported(root, sentence.trim());
}

function citeButton(marker, quotes) {
  const quote = el(
    "span",
    { className: "cite-quote", hidden: true, role: "note" },
    ...quotes.map((c) => el("span", {}, el("q", { textContent: c.quote }), " — ", link(c.source))),
  );
  const button = el("button", {
    type: "button",
    className: "cite",
    textContent: `[${marker}]`,
    title: "show the quote this citation was verified on",
  });
  button.dataset.marker = String(marker);
  button.setAttribute("aria-expanded", "false");
  button.addEventListener("click", () => {
    quote.hidden = !quote.hidden;
    button.setAttribute("aria-expanded", String(!quote.hidden));
  });
  return el("span", { className: "citation" }, button, quote);
}

function markUnsupported(root, sentence) {
  if (!sentence) return;
  const bare = sentence.replace(/\s*\[\d{1,6}\]/g, "");
  for (const text of textNodes(root)) {
    const at = text.data.indexOf(bare);
    if (at < 0) continue;
    const tail = text.splitText(at);
    tail.splitText(bare.length);
    const mark = el("mark", {
      className: "unsupported",
      title: "no verified quote backs this sentence",
      textContent: tail.data,
    });
    tail.replaceWith(mark);
    return;
  }
}

function drawGrounding(run) {
  const line = $("answer-grounding");
  line.hidden = run.groundedness === null;
  if (run.groundedness === null) return;
  const open = run.unsupported.length;
  line.textContent =
    `groundedness ${run.groundedness.toFixed(2)}: ${run.citations.length} verified ` +
    `citation(s)${open ? `, ${open} sentence(s) without a verified quote (marked)` : ""}`;
}

export function drawNode(run, nodeId) {
  const node = nodeId ? run.nodes.get(nodeId) : undefined;
  $("node-card").hidden = !node;
  if (!node) return;
  $("node-title").textContent = `${node.id} · ${node.status}`;
  drawSteer(run, node);
  const parts = [el("p", { className: "step", textContent: node.step })];
  const fixed = (x) => (x !== null ? x.toFixed(2) : "—");
  const numbers = [
    ["prior", fixed(node.prior), "detail-prior", MEANING.prior],
    ["score", fixed(node.score), "detail-score", MEANING.score],
    ["value", fixed(nodeValue(node)), "detail-value", MEANING.value],
    ["visits", String(node.visits), "detail-visits", MEANING.visits],
  ];
  if (node.seconds !== null) numbers.push(["time", seconds(node.seconds)]);
  const table = el("dl", { className: "facts node-numbers" });
  facts(table, numbers);
  parts.push(table);
  if (node.reason) parts.push(el("p", { className: "muted", textContent: `proposed: ${node.reason}` }));
  if (node.progress) parts.push(el("p", { className: "muted", textContent: `progress: ${node.progress}` }));
  if (node.prunedReason) parts.push(el("p", { className: "error", textContent: `pruned: ${node.prunedReason}` }));
  if (node.error) parts.push(el("p", { className: "error", textContent: node.error }));
  if (node.result) {
    parts.push(el("h3", { textContent: "Result" }), el("pre", { className: "result", textContent: node.result }));
  }
  if (node.toolCalls.length) {
    parts.push(
      el("h3", { textContent: "Tool calls" }),
      el(
        "ol",
        { className: "tool-calls" },
        ...node.toolCalls.map((call) =>
          el(
            "li",
            { className: call.ok ? "ok" : "failed" },
            el("code", { textContent: `${call.name}(${JSON.stringify(call.args)})` }),
            ` ${call.ok ? "ok" : `failed: ${call.error_kind}`} · ${seconds(call.seconds)}`,
          ),
        ),
      ),
    );
  }
  if (node.sources.length) {
    parts.push(
      el("h3", { textContent: "Sources" }),
      el("ol", { className: "sources" }, ...node.sources.map((s) => el("li", {}, link(s)))),
    );
  }
  if (node.answer) {
    const answer = el("div", { className: "markdown" });
    answer.innerHTML = markdown(node.answer);
    parts.push(el("h3", { textContent: "Candidate answer" }), answer);
  }
  $("node-details").replaceChildren(...parts);
}

export function resetPanel() {
  shownAnswer = null;
  shownPlan = null;
  $("side").hidden = true;
  $("run-head").hidden = true;
  $("node-card").hidden = true;
  $("vote-card").hidden = true;
}

/**
 * Why this answer: the vote's method, reason and candidates, and the chosen path step by step.
 * `onPick(id)` is called when a listed node is clicked.
 */
export function drawVote(run, onPick) {
  const vote = run.vote;
  const path = run.status === "done" ? run.path : [];
  $("vote-card").hidden = !vote && path.length === 0;
  $("vote-method").hidden = !vote;
  const how = vote?.chosen_by ? CHOSEN_BY[vote.chosen_by] : undefined;
  $("vote-method").textContent = vote ? (how ?? VOTE_METHODS[vote.method] ?? vote.method) : "";
  // The reason is model text: shown as text, never as markup.
  $("vote-reason").hidden = !vote?.reason;
  $("vote-reason").textContent = vote?.reason ?? "";
  $("chosen-path-title").hidden = path.length === 0;
  $("chosen-path").replaceChildren(
    ...path.map((id) => {
      const node = run.nodes.get(id);
      const score = node?.score != null ? `score ${node.score.toFixed(2)}` : "";
      return pick(id, [id, score, valueText(node)], node?.step, onPick);
    }),
  );
  // The chosen answer first, then the others by what the vote weighed, best first: the node
  // values the voter was shown (`values`, when the engine sends them), else the backed-up means.
  const shown = vote?.values ?? {};
  const weight = (id) =>
    shown[id] ?? (run.nodes.has(id) ? nodeValue(run.nodes.get(id)) : null) ?? -1;
  const candidates = [...(vote?.candidates ?? [])].sort(
    (a, b) => (b === vote.chosen_id) - (a === vote.chosen_id) || weight(b) - weight(a),
  );
  $("vote-candidates-title").hidden = !vote;
  $("vote-candidates-title").textContent = `Candidate answers (${candidates.length})`;
  $("vote-candidates").replaceChildren(
    ...candidates.map((id) => {
      const node = run.nodes.get(id);
      const chosen = id === vote.chosen_id;
      const evidence = id in shown ? `voter saw ${shown[id].toFixed(2)}` : valueText(node);
      const item = pick(id, [id, evidence, chosen ? "chosen" : ""], node?.step, onPick);
      item.classList.toggle("chosen", chosen);
      return item;
    }),
  );
}

function valueText(node) {
  const value = node ? nodeValue(node) : null;
  return value !== null ? `value ${value.toFixed(2)}` : "";
}

// How the answer was chosen (`chosen_by`, docs/events.md); wins over the vote's method.
const CHOSEN_BY = {
  single: "one candidate answer: no vote needed",
  first: "the first answer kept: no alternative was backed by more agreeing paths and verified quotes",
  carried: "the first path's answer once it had run the steps its plan had left: every quote verified",
  vote: "the voter model chose among the answers the choice rule admits",
  rule: "the voter failed: the choice rule's ranking decided",
  fallback: "the voter failed: the best-valued path was taken",
  best_effort: "no path completed: a best-effort answer",
};

const VOTE_METHODS = {
  llm: "the voter model chose",
  single: "one candidate answer: no vote needed",
  fallback: "the voter failed: the best-valued path was taken",
};

function pick(id, label, step, onPick) {
  const button = el(
    "button",
    { type: "button", className: "pick" },
    el("span", { className: "pick-label", textContent: label.filter(Boolean).join(" · ") }),
    el("span", { className: "pick-step", textContent: step ?? "" }),
  );
  button.dataset.nodeId = id;
  button.addEventListener("click", () => onPick(id));
  return el("li", {}, button);
}
