"""docs/configuration.md is what `app.settings_docs` writes from the settings classes and the
run parameters: a field added, renamed, re-bounded or re-described shows up here first."""

from app.settings_docs import COMMAND, PAGE, render


def test_the_configuration_page_matches_the_settings_and_run_parameters() -> None:
    written = PAGE.read_text(encoding="utf-8")
    assert written == render(), f"docs/configuration.md is out of date: run `{COMMAND}`"
