"""A run's chosen model through the real factory, client and SDK, against the Gemini simulator:
the chosen role's calls go to the chosen model, the others to the server's."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from app.settings import Settings
from calls.models import RunModels, SettingsModelFactory
from testkit.gemini_sim import SimulatorMaker, Text


async def test_a_run_s_executor_model_is_the_one_called_and_the_others_stay(
    gemini_sim: SimulatorMaker,
) -> None:
    sim = gemini_sim(lambda _request: Text("ok"))
    factory = SettingsModelFactory(
        Settings(
            _env_file=None,  # type: ignore[call-arg]
            model="google_genai:gemini-2.5-flash",
            model_retry_base_delay_s=0.0,
        )
    )
    run = RunModels(factory, {"executor": "google_genai:gemini-2.5-pro"})

    await run.for_role("executor").ainvoke([HumanMessage(content="step")])
    await run.for_role("planner").ainvoke([HumanMessage(content="plan")])

    assert [r.model for r in sim.requests] == ["gemini-2.5-pro", "gemini-2.5-flash"]
