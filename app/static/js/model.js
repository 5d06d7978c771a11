// A run as the page knows it, rebuilt from its events alone (docs/events.md). No drawing here.

export const TERMINAL = new Set(["done", "error", "cancelled"]);

export function newRun(runId) {
  return {
    id: runId,
    task: "",
    params: {},
    status: "queued", // queued → running (→ interrupted → running) → done | failed | cancelled
    waitingPlan: null, // the plan's steps while the run waits for their approval
    nodes: new Map(), // id → node, in creation order (siblings in the replanner's order)
    startedAt: null,
    endedAt: null,
    answer: null,
    provisional: false, // the first verified answer, shown while the search may replace it
    chosenBy: null, // how the final answer was chosen (`done`'s chosen_by)
    partial: false,
    chosenId: null,
    path: [],
    sources: [],
    citations: [], // verified citations of the answer: {marker, quote, source, node_id, …}
    groundedness: null, // share of the answer's sentences backed by a verified quote
    unsupported: [], // sentences of the answer no verified quote backs
    stopReason: null,
    error: null,
    metrics: null, // the terminal event's metrics
    toolCalls: 0,
    toolErrors: 0,
    pathsCompleted: 0,
    vote: null,
  };
}

function addNode(run, brief) {
  if (run.nodes.has(brief.node_id)) return; // a resumed run may announce a node again
  run.nodes.set(brief.node_id, {
    id: brief.node_id,
    parentId: brief.parent_id,
    depth: brief.depth,
    step: brief.step,
    status: "pending",
    prior: brief.score ?? null, // the evaluator's score of the proposal, when it scores
    reason: brief.reason ?? null,
    score: null, // the evaluator's score of the path's progress after this step
    progress: null, // and its reason
    value: null, // the engine's node value (agents/tree.py node_value), from the events' `values`
    valueSum: 0, // observations backed up from this node and its descendants
    visits: 0,
    result: null,
    error: null,
    seconds: null,
    toolCalls: [],
    sources: [],
    complete: false,
    candidate: false,
    answer: null,
    prunedReason: null,
  });
}

/** The engine's node values an event carries (`values`: node id → value). */
function takeValues(run, values) {
  for (const [id, value] of Object.entries(values ?? {})) {
    const n = run.nodes.get(id);
    if (n) n.value = value;
  }
}

/** An observation backed up to the node and every ancestor, as the engine does. */
function backUp(run, node, observed) {
  for (let n = node; n; n = run.nodes.get(n.parentId)) {
    n.valueSum += observed;
    n.visits += 1;
  }
}

/** An answer's event (`answer_ready`, `done`) as the run keeps it: the answer, its path, its grounding. */
function answered(event) {
  return {
    answer: event.answer,
    path: event.path,
    citations: event.citations ?? [],
    groundedness: event.groundedness ?? null,
    unsupported: event.unsupported ?? [],
  };
}

/** Fold one event into the run. Unknown types and unknown node ids are ignored. */
export function apply(run, event) {
  const node = event.node_id ? run.nodes.get(event.node_id) : undefined;
  // Progress events carry the engine's running counts: the costs update live.
  if (event.metrics && !TERMINAL.has(event.type)) run.metrics = { ...run.metrics, ...event.metrics };
  switch (event.type) {
    case "run_started":
      run.task = event.task;
      run.params = event.params;
      run.startedAt = Date.parse(event.ts);
      run.status = "running";
      break;
    case "plan":
      addNode(run, event.root);
      break;
    case "node_started":
      if (node) node.status = "running";
      break;
    case "tool_call":
      run.toolCalls += 1;
      if (!event.ok) run.toolErrors += 1;
      node?.toolCalls.push(event);
      break;
    case "node_finished":
      if (node) {
        Object.assign(node, {
          status: event.status,
          result: event.result,
          error: event.error,
          seconds: event.seconds,
          sources: event.sources ?? [],
        });
      }
      takeValues(run, event.values);
      break;
    case "candidates": {
      const parent = run.nodes.get(event.parent_id);
      if (parent) parent.complete = event.complete;
      for (const brief of event.nodes) addNode(run, brief);
      // The expansion's observation (its best live candidate's score) counts as one visit.
      if (parent && event.observed != null) backUp(run, parent, event.observed);
      takeValues(run, event.values);
      break;
    }
    case "evaluated":
      if (!node) break;
      Object.assign(node, { score: event.score, progress: event.reason ?? null });
      backUp(run, node, event.score);
      takeValues(run, event.values);
      break;
    case "pruned":
      if (node) Object.assign(node, { status: "pruned", prunedReason: event.reason });
      break;
    case "revived":
      if (node) Object.assign(node, { status: "pending", prunedReason: null });
      break;
    case "interrupt":
      Object.assign(run, { status: "interrupted", waitingPlan: event.steps });
      break;
    case "plan_reviewed": {
      Object.assign(run, { status: "running", waitingPlan: null });
      const root = event.root ? run.nodes.get(event.root.node_id) : undefined;
      if (root) root.step = event.root.step; // an edited plan seeds the root again
      break;
    }
    case "steered":
      if (!event.applied) break;
      for (const id of event.pruned ?? []) {
        const pruned = run.nodes.get(id);
        if (pruned) Object.assign(pruned, { status: "pruned", prunedReason: `pruned by ${event.by ?? "you"}` });
      }
      if (event.node) addNode(run, event.node);
      if (event.command === "boost" && node) node.prior = 1;
      break;
    case "path_completed":
      run.pathsCompleted += 1;
      if (node) Object.assign(node, { candidate: true, answer: event.answer });
      break;
    case "answer_ready":
      // The first verified answer (the chain's), readable at once; `done` replaces it.
      Object.assign(run, answered(event), { provisional: true });
      break;
    case "branched":
      for (const brief of event.nodes) addNode(run, brief);
      break;
    case "vote":
      run.vote = event;
      break;
    case "done":
      Object.assign(run, answered(event), {
        status: "done",
        provisional: false,
        chosenBy: event.chosen_by ?? null,
        partial: event.partial,
        chosenId: event.chosen_id,
        sources: event.sources,
      });
      break;
    case "error":
      Object.assign(run, { status: "failed", error: { code: event.code, message: event.message } });
      break;
    case "cancelled":
      run.status = "cancelled";
      break;
  }
  if (TERMINAL.has(event.type)) {
    run.stopReason = event.stop_reason;
    run.metrics = event.metrics ?? run.metrics;
    run.endedAt = Date.parse(event.ts);
    // Nothing runs after the end: steps still marked running were stopped with the run.
    for (const n of run.nodes.values()) if (n.status === "running") n.status = "cancelled";
  }
}

/** Nodes by status, for the costs panel. */
export function countByStatus(run) {
  const counts = {};
  for (const n of run.nodes.values()) counts[n.status] = (counts[n.status] ?? 0) + 1;
  return counts;
}
