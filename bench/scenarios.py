"""The trees the benchmarks grow (replies of scripted models; see testkit/scenario.py).

- `wide`: root -> 3 candidates -> 2 each: 10 nodes, 6 completed paths, width 6.
- `small`: root -> 2 candidates: 3 nodes, 2 paths (one load-test run).
- `tiny`: a one-step plan, no branching: 1 node, 1 path (the memory soak).
"""

from __future__ import annotations

from typing import Literal

from agents.params import RunParams
from testkit.scenario import Scenario

ScenarioName = Literal["wide", "small", "tiny"]
SCENARIOS: tuple[ScenarioName, ...] = ("wide", "small", "tiny")
TASK = "How well does Tree of Thoughts do on Game of 24, and why?"


def scenario(name: ScenarioName) -> Scenario:
    """A fresh scenario by name."""
    if name == "wide":
        return Scenario(
            plan=["Find the ToT paper", "Read its Game of 24 table", "Compare with re-runs"],
            replans={
                "Find the ToT paper": ["Read the paper", "Read the repository", "Read reviews"],
                "Read the paper": ["Paper: results", "Paper: ablations"],
                "Read the repository": ["Repo: scripts", "Repo: issues"],
                "Read reviews": ["Reviews: critiques", "Reviews: replications"],
            },
        )
    if name == "small":
        return Scenario(
            plan=["Find the ToT paper", "Read its Game of 24 table"],
            replans={"Find the ToT paper": ["Read the paper", "Read the repository"]},
        )
    if name == "tiny":
        return Scenario(plan=["Find the ToT paper"])
    raise ValueError(f"unknown scenario {name!r}")


def params_for(name: ScenarioName, **overrides: object) -> RunParams:
    """Run parameters that let the scenario's whole tree complete: the tree search (`mcts`),
    whose parallel siblings these benchmarks time; the anytime search runs one job at a time."""
    paths = {"wide": 6, "small": 2, "tiny": 1}[name]
    return RunParams.model_validate(
        {"strategy": "mcts", "max_paths": paths, "max_candidates": 3, **overrides}
    )
