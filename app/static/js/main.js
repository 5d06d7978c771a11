// The page: the start form (parameters read from the service's OpenAPI schema), the run list,
// and the open run (its address is #/runs/<id>, so a reload or a shared link reopens it).

import { api, apiKey, ApiError, follow, forgetKey } from "./api.js";
import { closeDocument, watchDocumentLinks } from "./docview.js";
import { initDocuments, pickedCollections } from "./documents.js";
import { apply, newRun, TERMINAL } from "./model.js";
import { drawNode, drawPanel, drawVote, resetPanel, reviewedPlan } from "./panel.js";
import { TreeView } from "./tree.js";

const $ = (id) => document.getElementById(id);
const MAIN_PARAMS = ["max_paths", "max_candidates", "max_depth", "strategy"];
const RUNS_PAGE = 20;

let run = null; // the open run (model.js)
let stream = null;
let selected = null;
let frame = 0;
let clock = 0;
const view = new TreeView($("tree"), selectNode);

function selectNode(id) {
  selected = id;
  view.select(id);
  drawNode(run, id);
  $("node-card").scrollIntoView({ block: "nearest" });
}

// A node picked in the side panel (the vote's candidates, the chosen path) is also shown.
function pickNode(id) {
  selectNode(id);
  view.reveal(id);
}

// -- the start form ------------------------------------------------------------------------------
let defaults = {};

async function loadParams() {
  let schema;
  try {
    const response = await fetch("/openapi.json");
    schema = (await response.json()).components.schemas.SolveRequest;
  } catch {
    return; // without the schema the form sends the task alone: the service's defaults apply
  }
  for (const [name, prop] of Object.entries(schema.properties)) {
    if (name === "task") continue;
    const field = paramField(name, prop);
    if (!field) continue;
    defaults[name] = prop.default ?? null;
    const main = MAIN_PARAMS.includes(name);
    (main ? $("params") : $("more-params").querySelector(".params")).append(field);
  }
}

function paramField(name, prop) {
  const spec = prop.anyOf?.find((p) => p.type !== "null") ?? prop;
  let input;
  if (spec.enum) {
    input = document.createElement("select");
    for (const option of spec.enum) input.append(new Option(option, option));
    input.value = prop.default;
  } else if (spec.type === "boolean") {
    input = Object.assign(document.createElement("input"), { type: "checkbox" });
    input.checked = Boolean(prop.default);
  } else if (spec.type === "integer" || spec.type === "number") {
    input = Object.assign(document.createElement("input"), { type: "number" });
    input.step = spec.type === "integer" ? "1" : "any";
    if (spec.minimum !== undefined) input.min = spec.minimum;
    if (spec.maximum !== undefined) input.max = spec.maximum;
    input.value = prop.default ?? "";
    input.required = !prop.anyOf;
  } else {
    return null;
  }
  input.name = name;
  input.id = `param-${name}`;
  const label = document.createElement("label");
  label.title = prop.description ?? "";
  label.append(name.replaceAll("_", " "), input);
  return label;
}

function formBody() {
  const body = { task: $("task").value.trim() };
  for (const input of $("start-form").querySelectorAll(".params [name]")) {
    const name = input.name;
    let value;
    if (input.type === "checkbox") value = input.checked;
    else if (input.type === "number") value = input.value === "" ? null : Number(input.value);
    else value = input.value;
    if (value !== defaults[name]) body[name] = value; // unchanged values: the service's defaults
  }
  const collections = pickedCollections();
  if (collections.length) body.collections = collections;
  return body;
}

async function start(event) {
  event.preventDefault();
  const error = $("start-error");
  error.hidden = true;
  $("start").disabled = true;
  try {
    const { data } = await api("/runs", { method: "POST", body: formBody() });
    location.hash = `#/runs/${data.run_id}`; // opens it (hashchange)
    loadRuns();
  } catch (e) {
    error.textContent = e instanceof ApiError ? e.message : "the service is unreachable";
    error.hidden = false;
  } finally {
    $("start").disabled = false;
  }
}

// -- the run list --------------------------------------------------------------------------------
let nextOffset = null;

async function loadRuns(offset = 0) {
  let page;
  try {
    page = (await api(`/runs?limit=${RUNS_PAGE}&offset=${offset}`)).data;
  } catch {
    return; // the list is a convenience; an error here must not break the open run
  }
  const items = page.runs.map((r) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "run-item";
    button.dataset.runId = r.run_id;
    button.dataset.status = r.status;
    const status = Object.assign(document.createElement("span"), {
      className: "badge",
      textContent: r.status,
    });
    status.dataset.status = r.status;
    const when = new Date(r.created_at).toLocaleString();
    button.append(status, Object.assign(document.createElement("span"), { textContent: r.task }));
    button.title = `${when}\n${r.task}`;
    button.addEventListener("click", () => (location.hash = `#/runs/${r.run_id}`));
    item.append(button);
    return item;
  });
  if (offset === 0) $("run-list").replaceChildren(...items);
  else $("run-list").append(...items);
  nextOffset = page.next_offset;
  $("older-runs").hidden = nextOffset === null;
  markOpenRun();
}

function markOpenRun() {
  for (const button of $("run-list").querySelectorAll(".run-item")) {
    button.classList.toggle("open", button.dataset.runId === run?.id);
  }
}

// -- the open run --------------------------------------------------------------------------------
function open(runId) {
  stream?.close();
  clearInterval(clock);
  view.clear();
  resetPanel();
  closeDocument();
  selected = null;
  run = runId ? newRun(runId) : null;
  $("tree-empty").hidden = Boolean(run);
  markOpenRun();
  if (!run) return;
  const opened = run;
  stream = follow(runId, {
    isTerminal: (event) => TERMINAL.has(event.type),
    onState: (text) => ($("stream-state").textContent = text),
    onEvent: (event) => {
      if (run !== opened) return;
      apply(run, event);
      if (TERMINAL.has(event.type)) {
        clearInterval(clock);
        $("stream-state").textContent = "";
        loadRuns();
      }
      redraw();
    },
  });
  clock = setInterval(() => run?.status === "running" && redraw(), 1000); // the wall time ticks
  redraw();
}

// Events come in bursts (a replay is hundreds at once): draw once per animation frame.
function redraw() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    if (!run) return;
    view.draw(run);
    drawPanel(run, Date.now());
    drawVote(run, pickNode);
    drawNode(run, selected);
  });
}

async function cancel() {
  if (!run) return;
  $("cancel").disabled = true;
  try {
    await api(`/runs/${encodeURIComponent(run.id)}/cancel`, { method: "POST" });
  } catch (e) {
    $("run-error").textContent = e.message;
    $("run-error").hidden = false;
  }
  // The stream brings the `cancelled` event; nothing else to do here.
}

// -- controls of an open run: the plan's review, steering a node ----------------------------------
function showProblem(id, e) {
  $(id).textContent = e instanceof ApiError ? e.message : "the service is unreachable";
  $(id).hidden = false;
}

async function review(reject) {
  if (!run?.waitingPlan) return;
  const { steps, edited } = reviewedPlan(run);
  let body = { action: "approve" };
  if (reject) body = { action: "reject" };
  else if (edited) body = { action: "edit", steps };
  try {
    await api(`/runs/${encodeURIComponent(run.id)}/resume`, { method: "POST", body });
    $("run-error").hidden = true;
  } catch (e) {
    showProblem("run-error", e);
  }
  // The stream brings `plan_reviewed` (or `cancelled`); the panel redraws from it.
}

async function steer(body) {
  if (!run || !selected) return;
  try {
    await api(`/runs/${encodeURIComponent(run.id)}/commands`, {
      method: "POST",
      body: { ...body, node_id: selected },
    });
    $("steer-error").hidden = true;
  } catch (e) {
    showProblem("steer-error", e);
  }
  // Applied at the run's next scheduling round: its `steered` event redraws the tree.
}

function route() {
  const match = location.hash.match(/^#\/runs\/([\w-]+)$/);
  const runId = match ? match[1] : null;
  if (runId !== run?.id) open(runId);
}

function showKeyState() {
  $("forget-key").hidden = apiKey() === null;
}

$("start-form").addEventListener("submit", start);
$("refresh-runs").addEventListener("click", () => loadRuns());
$("older-runs").addEventListener("click", () => loadRuns(nextOffset));
$("cancel").addEventListener("click", cancel);
$("plan-approve").addEventListener("click", () => review(false));
$("plan-reject").addEventListener("click", () => review(true));
$("steer-prune").addEventListener("click", () => steer({ command: "prune" }));
$("steer-boost").addEventListener("click", () => steer({ command: "boost" }));
$("steer-add").addEventListener("submit", (event) => {
  event.preventDefault();
  const step = $("steer-step").value.trim();
  if (!step) return;
  steer({ command: "add_step", step });
  $("steer-step").value = "";
});
$("node-close").addEventListener("click", () => {
  selected = null;
  view.select(null);
  drawNode(run, null);
});
$("forget-key").addEventListener("click", () => {
  forgetKey();
  showKeyState();
});
document.addEventListener("apikeychange", showKeyState);
window.addEventListener("hashchange", route);
watchDocumentLinks($("side"), () => run);

showKeyState();
await loadParams();
route();
await Promise.all([loadRuns(), initDocuments()]);
document.body.dataset.ready = "true";
