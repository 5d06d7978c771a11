// Drawing the tree: d3-hierarchy lays it out left to right; nodes are HTML buttons (text wraps,
// clicks and focus come for free) over an SVG of edges.

import { hierarchy, tree as tidyTree } from "../vendor/d3-hierarchy.js";

const NODE_W = 230; // app.css .node has the same size
const NODE_H = 70;
const GAP_X = 56;
const GAP_Y = 14;
const PAD = 16;
const SVG_NS = "http://www.w3.org/2000/svg";

export class TreeView {
  constructor(canvas, onSelect) {
    this.canvas = canvas;
    this.edges = canvas.querySelector("#edges");
    this.onSelect = onSelect;
    this.buttons = new Map(); // node id → its button, kept across redraws
    this.selected = null;
  }

  clear() {
    for (const button of this.buttons.values()) button.remove();
    this.buttons.clear();
    this.edges.replaceChildren();
    this.selected = null;
    this.canvas.style.width = this.canvas.style.height = "0";
  }

  select(id) {
    this.selected = id;
    for (const [nodeId, button] of this.buttons) button.classList.toggle("selected", nodeId === id);
  }

  draw(run) {
    const root = [...run.nodes.values()].find((n) => n.parentId === null);
    if (!root) return this.clear();
    const children = new Map();
    for (const n of run.nodes.values()) {
      if (n.parentId === null) continue;
      if (!children.has(n.parentId)) children.set(n.parentId, []);
      children.get(n.parentId).push(n);
    }
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
    const at = (d) => ({ left: PAD + d.y, top: PAD + d.x - top });
    const onPath = new Set(run.status === "done" ? run.path : []);

    const width = PAD * 2 + (laidOut.height + 1) * (NODE_W + GAP_X) - GAP_X;
    const height = PAD * 2 + bottom - top + NODE_H;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.edges.setAttribute("width", width);
    this.edges.setAttribute("height", height);

    const paths = [];
    laidOut.each((d) => {
      this.drawNode(d.data, at(d), onPath.has(d.data.id));
      if (!d.parent) return;
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
  }

  drawNode(node, { left, top }, chosen) {
    let button = this.buttons.get(node.id);
    if (!button) {
      button = document.createElement("button");
      button.type = "button";
      button.className = "node";
      button.dataset.nodeId = node.id;
      button.innerHTML =
        '<span class="node-head"><span class="node-id"></span><span class="node-status"></span>' +
        '<span class="node-score"></span></span><span class="node-step"></span>';
      button.addEventListener("click", () => this.onSelect(node.id));
      this.canvas.append(button);
      this.buttons.set(node.id, button);
    }
    button.style.transform = `translate(${left}px, ${top}px)`;
    button.dataset.status = node.status;
    button.classList.toggle("chosen", chosen);
    button.classList.toggle("candidate", node.candidate);
    button.classList.toggle("selected", node.id === this.selected);
    button.title = node.prunedReason ? `${node.step}\npruned: ${node.prunedReason}` : node.step;
    button.querySelector(".node-id").textContent = node.id;
    button.querySelector(".node-status").textContent = node.candidate
      ? `${node.status} · answer`
      : node.status;
    button.querySelector(".node-score").textContent = scoreText(node);
    button.querySelector(".node-step").textContent = node.step;
  }
}

export function scoreText(node) {
  if (node.score !== null) return `score ${node.score.toFixed(2)}`;
  if (node.prior !== null) return `prior ${node.prior.toFixed(2)}`;
  return "";
}
