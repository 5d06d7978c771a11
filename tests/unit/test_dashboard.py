"""The Grafana dashboard queries only metrics the service exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import app.observability.metrics  # noqa: F401  # its metrics register on import

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "plantree-dashboard.json"
METRIC = re.compile(r"\bplantree_[a-z_]+")


def test_every_dashboard_query_names_an_exposed_metric() -> None:
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "gauge": [""]}
    exposed = {
        family.name + suffix
        for family in REGISTRY.collect()
        for suffix in suffixes.get(family.type, [""])
    }
    panels = json.loads(DASHBOARD.read_text())["panels"]
    named = {m for p in panels for t in p["targets"] for m in METRIC.findall(t["expr"])}

    assert len(panels) >= 10
    assert named
    assert named - exposed == set()
