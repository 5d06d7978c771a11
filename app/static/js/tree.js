// Drawing the tree: d3-hierarchy lays it out left to right; nodes are HTML buttons (text wraps,
// clicks and focus come for free) over an SVG of edges. The canvas zooms and pans (zoom.js).

import { hierarchy, tree as tidyTree } from "../vendor/d3-hierarchy.js";
import { PanZoom, STEP } from "./zoom.js";

const NODE_W = 230; // app.css .node has the same size
const NODE_H = 86;
const GAP_X = 56;
const GAP_Y = 14;
const PAD = 16;
const SVG_NS = "http://www.w3.org/2000/svg";

const NODE_HTML =
  '<span class="node-head"><span class="node-id"></span><span class="node-status"></span>' +
  '<span class="node-score"></span></span><span class="node-step"></span>' +
  '<span class="node-stats"><span class="node-prior"></span><span class="node-value"></span>' +
  '<span class="node-visits"></span></span><span class="node-far"></span>' +
  '<span class="node-bar"><span></span></span>';

/** What the search's numbers mean (tooltips here and in the node details). */
export const MEANING = {
  score: "the evaluator's score of the path's progress after this step",
  prior: "the score the proposal got before it ran (its prior in the search)",
  value:
    "the engine's value of this node (the bar under it): its best live child's, or its prior " +
    "blended with its progress score",
  visits:
    "how many observations were backed up through this node (progress scores, and each " +
    "expansion's best candidate score)",
};

// Below this scale a node's texts are too small to read: it shows its value alone, in large type.
const FAR = 0.55;

export class TreeView {
  constructor(viewport, onSelect) {
    this.viewport = viewport;
    this.canvas = viewport.querySelector("#canvas");
    this.edges = viewport.querySelector("#edges");
    this.onSelect = onSelect;
    this.buttons = new Map(); // node id → its button, kept across redraws
    this.selected = null;
    this.zoom = new PanZoom(viewport, this.canvas, (z) => this.showZoom(z));
    const bar = viewport.querySelector(".zoom-bar");
    bar.querySelector("#zoom-in").addEventListener("click", () => this.zoom.zoomBy(STEP));
    bar.querySelector("#zoom-out").addEventListener("click", () => this.zoom.zoomBy(1 / STEP));
    bar.querySelector("#zoom-fit").addEventListener("click", () => this.zoom.fit());
    bar.querySelector("#zoom-actual").addEventListener("click", () => this.zoom.actualSize());
    // Keyboard users reach nodes that are off screen: bring the focused one into view.
    viewport.addEventListener("focusin", (e) => {
      const id = e.target.closest?.(".node")?.dataset.nodeId;
      if (id) this.reveal(id);
    });
  }

  showZoom(zoom) {
    this.viewport.classList.toggle("far", zoom.k < FAR);
    this.viewport.style.setProperty("--zoom", String(zoom.k));
    this.viewport.querySelector("#zoom-level").textContent = `${Math.round(zoom.k * 100)}%`;
    this.viewport.querySelector("#zoom-fit").setAttribute("aria-pressed", String(zoom.fitting));
  }

  clear() {
    for (const button of this.buttons.values()) button.remove();
    this.buttons.clear();
    this.edges.replaceChildren();
    this.selected = null;
    this.canvas.style.width = this.canvas.style.height = "0";
    this.zoom.reset();
  }

  select(id) {
    this.selected = id;
    for (const [nodeId, button] of this.buttons) button.classList.toggle("selected", nodeId === id);
  }

  /** Pan so that node `id` is on screen (the scale stays). */
  reveal(id) {
    const button = this.buttons.get(id);
    if (!button) return;
    const { left, top } = button.dataset;
    this.zoom.reveal(Number(left), Number(top), NODE_W, NODE_H);
  }

  draw(run) {
    const roots = [...run.nodes.values()].filter((n) => n.parentId === null);
    if (!roots.length) return this.clear();
    const children = new Map();
    for (const n of run.nodes.values()) {
      if (n.parentId === null) continue;
      if (!children.has(n.parentId)) children.set(n.parentId, []);
      children.get(n.parentId).push(n);
    }
    // Alternatives to the first step are roots beside it: they hang from an undrawn root,
    // and every column moves one to the left.
    const many = roots.length > 1;
    const root = many ? { id: "", synthetic: true } : roots[0];
    if (many) children.set("", roots);
    const shift = many ? NODE_W + GAP_X : 0;
    const layout = tidyTree()
      .nodeSize([NODE_H + GAP_Y, NODE_W + GAP_X])
      .separation((a, b) => (a.parent === b.parent ? 1 : 1.2));
    const laidOut = layout(hierarchy(root, (n) => children.get(n.id)));

    let top = Infinity;
    let bottom = -Infinity;
    laidOut.each((d) => {
      top = Math.min(top, d.x);
      bottom = Math.max(bottom, d.x);
    });
    const at = (d) => ({ left: PAD + d.y - shift, top: PAD + d.x - top });
    const onPath = new Set(run.status === "done" ? run.path : []);
    const voted = new Set(run.vote?.candidates ?? []);

    const width = PAD * 2 + (laidOut.height + (many ? 0 : 1)) * (NODE_W + GAP_X) - GAP_X;
    const height = PAD * 2 + bottom - top + NODE_H;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.edges.setAttribute("width", width);
    this.edges.setAttribute("height", height);

    const paths = [];
    laidOut.each((d) => {
      if (d.data.synthetic) return;
      const id = d.data.id;
      const mark = { chosen: onPath.has(id), winner: id === run.chosenId, voted: voted.has(id) };
      this.drawNode(d.data, at(d), mark);
      if (!d.parent || d.parent.data.synthetic) return;
      const from = at(d.parent);
      const to = at(d);
      const x1 = from.left + NODE_W;
      const y1 = from.top + NODE_H / 2;
      const x2 = to.left;
      const y2 = to.top + NODE_H / 2;
      const mid = (x1 + x2) / 2;
      const path = document.createElementNS(SVG_NS, "path");
      path.setAttribute("d", `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`);
      path.setAttribute("class", `edge ${d.data.status}`);
      path.classList.toggle("chosen", onPath.has(d.data.id) && onPath.has(d.parent.data.id));
      path.dataset.to = d.data.id;
      paths.push(path);
    });
    this.edges.replaceChildren(...paths);
    this.zoom.setSize(width, height);
  }

  drawNode(node, { left, top }, { chosen, winner, voted }) {
    let button = this.buttons.get(node.id);
    if (!button) {
      button = document.createElement("button");
      button.type = "button";
      button.className = "node";
      button.dataset.nodeId = node.id;
      button.innerHTML = NODE_HTML;
      for (const [part, hint] of Object.entries(MEANING)) {
        button.querySelector(`.node-${part}`).title = hint;
      }
      button.addEventListener("click", () => this.onSelect(node.id));
      this.canvas.append(button);
      this.buttons.set(node.id, button);
    }
    button.style.transform = `translate(${left}px, ${top}px)`;
    Object.assign(button.dataset, { left, top, status: node.status });
    button.classList.toggle("chosen", chosen);
    button.classList.toggle("winner", winner);
    button.classList.toggle("voted", voted);
    button.classList.toggle("candidate", node.candidate);
    button.classList.toggle("selected", node.id === this.selected);
    button.title = nodeTitle(node, winner);
    button.querySelector(".node-id").textContent = node.id;
    button.querySelector(".node-status").textContent = statusText(node, winner);
    button.querySelector(".node-score").textContent =
      node.score !== null ? `score ${node.score.toFixed(2)}` : "";
    button.querySelector(".node-step").textContent = node.step;
    const { prior, value, visits } = stats(node);
    button.querySelector(".node-prior").textContent = prior;
    button.querySelector(".node-value").textContent = value;
    button.querySelector(".node-visits").textContent = visits;
    // The bar is the node's value, drawn paler while it is only the prior (nothing observed).
    const bar = button.querySelector(".node-bar");
    const worth = nodeValue(node) ?? node.prior;
    const onlyPrior = node.visits === 0 && node.score === null;
    const far = button.querySelector(".node-far");
    far.textContent = worth?.toFixed(2) ?? "·";
    far.classList.toggle("prior", onlyPrior);
    bar.classList.toggle("prior", onlyPrior && node.prior !== null);
    bar.firstElementChild.style.width = `${Math.round(100 * (worth ?? 0))}%`;
  }
}

/** The engine's node value; for a run recorded before events carried it, the mean of the
 * observations backed up through the node (null before its first visit). */
export function nodeValue(node) {
  if (node.value != null) return node.value;
  return node.visits ? node.valueSum / node.visits : null;
}

/** A node's search statistics as short texts: prior, value, visits. */
export function stats(node) {
  const value = nodeValue(node);
  return {
    prior: node.prior !== null ? `prior ${node.prior.toFixed(2)}` : "",
    value: value !== null ? `value ${value.toFixed(2)}` : "",
    visits: node.visits ? `${node.visits} visit${node.visits === 1 ? "" : "s"}` : "",
  };
}

function statusText(node, winner) {
  if (winner) return `${node.status} · voted`;
  return node.candidate ? `${node.status} · answer` : node.status;
}

function nodeTitle(node, winner) {
  const lines = [node.step];
  if (node.prunedReason) lines.push(`pruned: ${node.prunedReason}`);
  if (winner) lines.push("the vote chose this path's answer");
  return lines.join("\n");
}
