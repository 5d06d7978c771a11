"""The prefix-reuse benchmark (bench/local_prefix.py) on the bundled SmolLM2 at its smoke
size: three real engine runs, each with the prompt tokens llama.cpp evaluated and the floor no
prefix reuse could go below, and the console lines that report them."""

from __future__ import annotations

from pathlib import Path

from bench.local_prefix import LocalPrefixConfig, run_local_prefix, summary


async def test_each_run_reports_what_it_evaluated_against_its_floor(tmp_path: Path) -> None:
    measured = await run_local_prefix(
        LocalPrefixConfig(max_paths=1, max_llm_calls=4, max_depth=1), tmp_path
    )

    runs = measured["runs"]
    assert set(runs) == {"off", "on", "shared"}
    for run in runs.values():
        assert run["calls"] >= 2
        assert 0 < run["prompt_floor"] <= run["prompt_evaluated"] <= run["prompt_tokens"]
    off = runs["off"]
    assert measured["prompt_floor_saved"] == round(
        1 - off["prompt_floor"] / off["prompt_evaluated"], 3
    )
    lines = summary({measured["model"]: measured})
    assert lines[0].startswith(f"local prefix reuse, {measured['model']}")
    assert (
        f"floor (what no prefix reuse could spare): states off {off['prompt_floor']} "
        f"({measured['prompt_floor_saved'] * 100:.0f}% below what it evaluated)"
    ) in lines[-1]
