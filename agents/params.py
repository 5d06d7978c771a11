"""Per-run parameters: validated, bounded, and always winning over process defaults."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from calls.settings import ROLES, Role

Strategy = Literal["anytime", "mcts", "beam", "dfs"]
InFlightRule = Literal["unobserved", "virtual_loss"]

MAX_DOMAINS = 50
MAX_TOOLS = 16
MAX_COLLECTIONS = 16
ModelString = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:/@+-]+$")
]
"""A model string as the factory takes it (`provider:model`, or `local`)."""
ToolName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
]
CollectionId = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
]
"""The id of a document collection (POST /collections)."""
Domain = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=253,
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$",
    ),
]
"""A host name; it covers its subdomains."""
Domains = Annotated[list[Domain], Field(max_length=MAX_DOMAINS)]
"""The hosts a web search filter names."""
Fraction = Annotated[float, Field(ge=0, le=1)]
"""A score, a node value or a share: the search's 0-to-1 scale."""
PathSteps = Annotated[int, Field(ge=1, le=20)]
"""A number of steps of one path (the plan is one path's first steps)."""
Breadth = Annotated[int, Field(ge=1, le=8)]
"""How many nodes the search opens side by side: per node, or per layer."""


class RunParams(BaseModel):
    """Knobs of one search. Every field has a default and a hard upper bound."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_paths: int = Field(
        default=4, ge=1, le=50, description="Stop once this many candidate answers exist."
    )
    max_candidates: Breadth = Field(
        default=3, description="Most next steps the replanner may propose per node."
    )
    max_depth: PathSteps = Field(default=6, description="Most steps on one path.")
    max_plan_steps: PathSteps = Field(default=6, description="Most steps in the plan.")
    max_nodes: int = Field(default=40, ge=1, le=500, description="Most tree nodes in the run.")
    max_llm_calls: int = Field(
        default=150, ge=2, le=5000, description="Model calls of every role, the vote included."
    )
    max_tokens: int = Field(
        default=2_000_000, ge=1_000, le=50_000_000, description="Input plus output tokens."
    )
    deadline_s: float = Field(
        default=900.0, gt=0, le=7200, description="Wall seconds for the search phase."
    )
    max_concurrency: int = Field(
        default=4,
        ge=1,
        le=32,
        description="Most jobs calling models at once; as many more may be inside tool calls. "
        "The tree strategies (mcts, beam, dfs) only: the anytime search runs one job at a time, "
        "so that its answer never depends on which job ends first.",
    )
    strategy: Strategy = Field(
        default="anytime",
        description="anytime: the single chain first (greedy, its answer streamed as "
        "`answer_ready`), then alternatives only at the steps where model-free signals say the "
        "answer is weak, and the first answer replaced only by one that agreeing paths and its "
        "verified quotes rank at least as well; mcts: PUCT over node values with the "
        "candidates' scores as priors (LATS); beam: best `beam_width` per layer; dfs: deepest "
        "first.",
    )
    seed: int = Field(
        default=0,
        ge=0,
        le=2**31 - 1,
        description="The run's seed. Each sampling call's seed is derived from it and the call's "
        "role, node and attempt, never from timing; the first path and the judging roles decode "
        "greedily. The same question, parameters and seed give the same answer where the model "
        "is repeatable (docs/models.md).",
    )
    beam_width: Breadth = Field(default=2, description="Nodes kept per layer (beam).")
    exploration: float = Field(
        default=1.0,
        ge=0,
        le=5,
        description="PUCT exploration constant c (mcts): weight of prior · sqrt(N parent) / "
        "(1 + N child).",
    )
    in_flight_rule: InFlightRule = Field(
        default="virtual_loss",
        description="How mcts counts work in flight when it picks in parallel: virtual_loss "
        "(as visits of value 0, which also lower the value); unobserved (WU-UCT: as visits in "
        "the exploration term only, the value untouched; the better of the two from 8 slots "
        "up).",
    )
    prior_weight: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="Pseudo-visits a candidate's score counts for in its node's value "
        "(value = (w·prior + value sum) / (w + visits)).",
    )
    evaluate: bool = Field(
        default=True,
        description="Use the replanner's candidate scores (priors, pruning); the evaluator "
        "judges a path's progress only where that can change the search (a path's end when "
        "`satisfaction` is set, or unscored proposals); false: no scores, no pruning, no "
        "evaluator calls.",
    )
    min_score: Fraction = Field(default=0.2, description="Candidates scored below this are pruned.")
    reserve: bool = Field(
        default=False,
        description="Revive the best pruned candidate when nothing else is left to run, more "
        "paths are wanted and the budget can carry one (`revived` events). A revived path's "
        "answer is not voted on while a searched path has one: where it agrees with the chosen "
        "answer, its verified citations join that answer's. Off by default: on the multi-hop "
        "benchmark it cost a third more calls for no better answers (docs/benchmarks.md §11).",
    )
    satisfaction: Fraction | None = Field(
        default=None,
        description="Stop early once a completed path's value reaches this (and min_depth).",
    )
    min_depth: PathSteps = Field(
        default=1, description="Fewest steps a path needs to stop the search early."
    )
    min_groundedness: Fraction = Field(
        default=0.5,
        description="Candidates whose answer has a smaller share of sentences backed by a "
        "verified quote are not voted on, unless no candidate reaches it.",
    )
    use_cache: bool = Field(
        default=True, description="Serve repeated model calls from the cache (false: bypass)."
    )
    stop_grace_s: float = Field(
        default=20.0,
        ge=0,
        le=30,
        description="When the search stops, model calls in flight may finish in the background "
        "this long, silently, to feed the cache (0, or use_cache=false: cancel them at once).",
    )
    max_tool_calls_per_step: int = Field(
        default=4, ge=0, le=20, description="Most tool calls the executor makes for one step."
    )
    approve_plan: bool = Field(
        default=False,
        description="Stop after the planner until the plan is approved, edited or rejected "
        "(the run waits as `interrupted`, an `interrupt` event carrying the plan; POST "
        "/runs/{id}/resume answers it).",
    )
    model: ModelString | None = Field(
        default=None,
        description="The model of every role for this run (an init_chat_model string such as "
        "`google_genai:gemini-2.5-pro`, or `local`); one of the operator's LATS_ALLOWED_MODELS. "
        "Null: the server's models.",
    )
    models: dict[Role, ModelString] | None = Field(
        default=None,
        description='Per-role models for this run, e.g. {"executor": "…"}; each one of '
        "LATS_ALLOWED_MODELS. A role named here wins over `model`.",
    )
    tools: list[ToolName] | None = Field(
        default=None,
        max_length=MAX_TOOLS,
        description="The research tools this run may use: a subset of the server's enabled "
        "tools (LATS_TOOLS and the MCP servers' tools); [] for none. Null: every enabled tool.",
    )
    collections: list[CollectionId] | None = Field(
        default=None,
        max_length=MAX_COLLECTIONS,
        description="The ids of the caller's document collections this run searches, with the "
        "`documents` tool (added whatever `tools` says); each must be the caller's own. "
        "Null or []: none.",
    )
    include_domains: Domains | None = Field(
        default=None,
        description="Web search shows the model only results whose host is one of these "
        "domains or their subdomains.",
    )
    exclude_domains: Domains | None = Field(
        default=None,
        description="Web search never shows the model a result whose host is one of these "
        "domains or their subdomains (wins over include_domains).",
    )

    def model_overrides(self) -> dict[Role, str]:
        """The roles whose model this run chooses, and their model strings."""
        chosen: dict[Role, str] = {}
        if self.model is not None:
            chosen = dict.fromkeys(ROLES, self.model)
        chosen.update(self.models or {})
        return chosen
