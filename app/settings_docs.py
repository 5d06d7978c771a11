"""docs/configuration.md, written from the code: every process setting (`app.settings.Settings`
and the parts it is built from) and every per-run parameter (`agents.params.RunParams`), each
with its type, default, bounds and its field's own description.

The page's layout and the notes it adds to the fields live here; a field's cells (its type,
bounds and default as the page shows them) come from `app.field_cells`.

`python -m app.settings_docs` prints the page; `--write` (or `make docs`) replaces the file.
`tests/unit/test_configuration_page.py` fails when the file and the code disagree."""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from agents.params import RunParams
from app.field_cells import description, first_sentence, is_secret, row, shape, value_text
from app.settings import Settings
from calls.local_catalog import CATALOG

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration.md"
COMMAND = "python -m app.settings_docs --write"

PARTS: dict[str, tuple[str, str]] = {
    "ModelSettings": ("Models and the call policy", "[models.md](models.md)"),
    "EngineSettings": ("The engine", "[architecture.md](architecture.md)"),
    "ToolSettings": ("The research tools", "[tools.md](tools.md)"),
    "Settings": ("The service", "[deploy.md](deploy.md), [security.md](security.md)"),
}
"""Each part class of `Settings`: its section's title, and the pages that say more."""

CATALOG_DEFAULTS = {
    "model_timeout_s": "model_timeout_s",
    "step_timeout_s": "step_timeout_s",
    "local_n_ctx": "n_ctx",
    "local_instructions_last": "instructions_last",
}
"""Settings whose default the chosen local model changes: the field of its catalog entry
(`calls/local_catalog.py`) that holds it."""

DEFAULT_NOTES = {
    "quote_choices": "`true` when the responder's model is `local`, else `false`",
}
"""Defaults a validator of `Settings` decides, as the page states them."""

SETTING_NOTES = {
    "google_api_key": "The default model needs it.",
    "model": "Any LangChain provider works once its package is installed; `local` is the "
    "local model.",
    "model_max_retries": "A 400 is never retried.",
    "model_rps": "The rate follows the provider's `retryDelay` too.",
    "result_max_chars": "A prompt shows at most this much of it.",
    "tools": "`local_docs` too, with LATS_LOCAL_DOCS_DIR.",
    "tool_max_workers": "A tool call's timeout runs from when a thread starts it.",
    "tool_result_max_chars": "Size limit of the text a tool returns.",
    "tool_cache_ttl_s": "Lifetime of the tools' result cache; 0 turns the cache off.",
    "web_search_region": "ddgs region, e.g. `us-en`, `de-de`.",
    "web_search_safesearch": "ddgs safe search.",
    "web_search_max_results": "Results per web search.",
    "arxiv_max_results": "Papers per arXiv search, fetched as one page of that size.",
    "wikipedia_lang": "Wikipedia edition.",
    "wikipedia_user_agent": "User-Agent sent to Wikimedia, which answers 403 without a proper "
    "one: put a contact URL or address in it.",
    "storage_reserve_bytes": "Runs in flight when the disk fills end with `storage_full`, "
    'written into this space ([deploy.md](deploy.md#faults), "Faults").',
    "redis_url": "The wake-ups are new events, cancels and waiting runs.",
    "max_active_runs": "Per worker process.",
    "max_queued_runs": "Counted across the deployment.",
    "store_outage_s": "Meanwhile the API answers 503 `store_unavailable` with `Retry-After` "
    '([deploy.md](deploy.md#faults), "Faults").',
    "run_retention_days": "The first sweep runs at a worker's start-up.",
    "max_body_bytes": "Request body limit; a bigger body is a 413.",
    "allowed_hosts": "`*.example.com` accepts its subdomains; another `Host` gets a 400.",
    "api_keys": "When set, every endpoint but the health checks needs `Authorization: Bearer "
    "<key>` or `X-API-Key: <key>`, and a key reaches only its own runs "
    "([security.md](security.md)).",
    "max_runs_per_key": "Beyond, 429.",
    "key_rps": "Shared by every process through Redis when LATS_REDIS_URL is set, else per "
    "process (so is LATS_KEY_BURST); beyond, 429 with `Retry-After`.",
    "key_max_streams": "Across processes through Redis when LATS_REDIS_URL is set, else per "
    "process; beyond, 429.",
    "allowed_models": "E.g. `google_genai:gemini-2.5-flash,google_genai:gemini-2.5-pro`.",
    "webhook_retry_base_s": "Full jitter.",
}
"""What the page adds to a setting's own description: facts about the deployment around it."""

PARAM_NOTES = {
    "satisfaction": "The run then ends with `stop_reason: early_stop`.",
    "use_cache": "The same switch serves an identical earlier request's result (`reused_from` on "
    "`done`); false bypasses both and refreshes the kept result.",
    "approve_plan": "A waiting run makes no model call and holds no slot, across restarts.",
    "model": "Another model is a 422, and so is any model when the server has no allow-list.",
    "tools": "An unknown or disabled tool is a 422.",
}
"""What the page adds to a run parameter's own description: how the service answers it."""

_GROUP = re.compile(r"^\s+# (?P<title>.+?) -{5,}\s*$")
_FIELD = re.compile(r"^ {4}(?P<name>[a-z_][a-z0-9_]*)\s*:")


def render() -> str:
    """The whole page, as docs/configuration.md should hold it."""
    notes = {**SETTING_NOTES, **DEFAULT_NOTES}
    _check_notes(Settings, notes)
    _check_notes(RunParams, PARAM_NOTES)
    env_file = Settings.model_config.get("env_file")
    prefix = Settings.model_config.get("env_prefix")
    lines = [
        "# Configuration",
        "",
        f"<!-- Generated by `{COMMAND}` (`make docs`) from the settings classes and",
        "agents/params.py: edit their field descriptions (or the notes in",
        "app/settings_docs.py), not this page. -->",
        "",
        f"Two layers. **Process settings** are read once at start-up from `{prefix}…` "
        f"environment variables or a `{env_file}` file in the working directory "
        "(`.env.example` shows the common ones); lists are comma separated. **Run parameters** "
        "are fields of a run's request body ([api.md](api.md#request-body)), each with a "
        "default and bounds. A request's value always wins; no setting overrides it.",
        "",
        "The process refuses to start on a bad setting (an unknown tool, a model string it "
        "cannot build, a missing key) with a one-line message naming what to fix.",
        "",
    ]
    for part in _parts():
        lines += _part_section(part)
    lines += _params_section()
    return "\n".join(lines)


def _parts() -> list[type[BaseSettings]]:
    bases = [b for b in Settings.__bases__ if issubclass(b, BaseSettings)]
    return [*bases, Settings]


def _own_fields(cls: type[BaseModel]) -> list[str]:
    inherited = {
        name
        for base in cls.__mro__[1:]
        if isinstance(base, type) and issubclass(base, BaseModel)
        for name in base.model_fields
    }
    return [name for name in cls.model_fields if name not in inherited]


def _check_notes(cls: type[BaseModel], notes: dict[str, str]) -> None:
    unknown = sorted(set(notes) - set(cls.model_fields))
    if unknown:
        raise ValueError(f"notes name fields {cls.__name__} does not have: {', '.join(unknown)}")
    bare = [name for name, info in cls.model_fields.items() if not info.description]
    missing = [name for name in bare if name not in notes]
    if missing:
        raise ValueError(
            f"{cls.__name__} fields with neither a description nor a note: {', '.join(missing)}; "
            "give each a Field(description=...)"
        )


def _groups(cls: type[BaseModel], names: list[str]) -> list[tuple[str | None, list[str]]]:
    """The fields in the source's `# Title ----` groups, in order (one untitled group when the
    source has no such comment)."""
    wanted = set(names)
    groups: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in inspect.getsource(cls).splitlines():
        if header := _GROUP.match(line):
            groups.append((header["title"], []))
        elif (field := _FIELD.match(line)) and field["name"] in wanted:
            groups[-1][1].append(field["name"])
    found = [(title, fields) for title, fields in groups if fields]
    listed = {name for _, fields in found for name in fields}
    if listed != wanted:
        return [(None, names)]
    return found


def _part_section(part: type[BaseSettings]) -> list[str]:
    title, more = PARTS[part.__name__]
    source = Path(inspect.getfile(part)).resolve().relative_to(ROOT).as_posix()
    lines = [
        f"## {title}",
        "",
        f"`{source}`, `{part.__name__}`: {first_sentence(part.__doc__)} More: {more}.",
        "",
    ]
    prefix = str(part.model_config.get("env_prefix", ""))
    groups = _groups(part, _own_fields(part))
    for group, names in groups:
        if group is not None and len(groups) > 1:
            lines += [f"### {group}", ""]
        lines += [
            "| variable | type | default | bounds | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name in names:
            info = part.model_fields[name]
            kind, bounds = shape(info.annotation, info.metadata)
            cells = [
                f"`{_env_name(prefix, name, info)}`",
                kind,
                _setting_default(name, info),
                ", ".join(bounds),
                description(info, SETTING_NOTES.get(name)),
            ]
            lines.append(row(cells))
        lines.append("")
    return lines


def _params_section() -> list[str]:
    source = Path(inspect.getfile(RunParams)).resolve().relative_to(ROOT).as_posix()
    lines = [
        "## Run parameters",
        "",
        f"`{source}`, `RunParams`: {first_sentence(RunParams.__doc__)} A request body "
        "also carries `task`, and may carry `thread_id` and `webhook` "
        "([api.md](api.md#request-body)); `lats solve` takes the main ones as flags "
        "([cli.md](cli.md)). Unknown fields are refused.",
        "",
        "| field | type | default | bounds | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, info in RunParams.model_fields.items():
        kind, bounds = shape(info.annotation, info.metadata)
        default = info.get_default(call_default_factory=True)
        cells = [
            f"`{name}`",
            kind,
            "null" if default is None else value_text(default, json=True),
            ", ".join(bounds),
            description(info, PARAM_NOTES.get(name)),
        ]
        lines.append(row(cells))
    lines.append("")
    return lines


def _env_name(prefix: str, name: str, info: FieldInfo) -> str:
    alias = info.validation_alias
    return alias if isinstance(alias, str) else f"{prefix}{name}".upper()


def _setting_default(name: str, info: FieldInfo) -> str:
    if name in DEFAULT_NOTES:
        return DEFAULT_NOTES[name]
    default = info.get_default(call_default_factory=True)
    if is_secret(info.annotation) and default:
        return "set (not shown)"
    shown = "unset" if default is None else value_text(default, json=False)
    attribute = CATALOG_DEFAULTS.get(name)
    if attribute is None:
        return shown
    per_model = {model: getattr(spec, attribute) for model, spec in CATALOG.items()}
    if default is None:
        if len(set(per_model.values())) == 1:
            return f"the local model's ({value_text(next(iter(per_model.values())))} for each)"
        listed = ", ".join(f"`{m}`: {value_text(v, json=False)}" for m, v in per_model.items())
        return f"the local model's: {listed}"
    changed = {m: v for m, v in per_model.items() if v is not None and v != default}
    if not changed:
        return shown
    listed = ", ".join(f"`{m}`: {value_text(v, json=False)}" for m, v in changed.items())
    return f"{shown} (local model {listed})"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the page, or with `--write` replace docs/configuration.md with it."""
    parser = argparse.ArgumentParser(prog="python -m app.settings_docs", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    page = render()
    if args.write:
        PAGE.write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
