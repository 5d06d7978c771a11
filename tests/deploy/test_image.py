"""The service image as built from the project's Dockerfile: who it runs as, its health check,
what its layers hold (no secrets, no .env, no test code), its size, and that a code-only change
reuses the dependency layers."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from tests.support.deploy import FIGURES, ROOT, SERVICE_IMAGE, Engine

SECRET_NAMES = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)=\S", re.IGNORECASE)


def inspect(engine: Engine, image: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads(engine.docker("image", "inspect", image))
    return data[0]


def test_the_service_runs_as_a_non_root_user_with_a_health_check(images: Engine) -> None:
    config = inspect(images, SERVICE_IMAGE)["Config"]

    uid = images.docker("run", "--rm", SERVICE_IMAGE, "id", "-u").strip()

    assert config["User"] == "lats"
    assert uid == "10001"
    assert any("/healthz" in part for part in config["Healthcheck"]["Test"])
    assert config["Cmd"][:3] == ["python", "-m", "app"]


def test_no_layer_or_setting_holds_a_secret_or_an_env_file(images: Engine) -> None:
    history = images.docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", SERVICE_IMAGE)
    env = inspect(images, SERVICE_IMAGE)["Config"]["Env"]
    env_files = images.docker(
        "run",
        "--rm",
        "--user",
        "0",
        SERVICE_IMAGE,
        "find",
        "/",
        "-xdev",
        "-name",
        ".env",
        "-o",
        "-name",
        "*.env",
    )

    assert not SECRET_NAMES.search(history), history
    assert not [line for line in env if SECRET_NAMES.search(line)]
    assert "simulated-key" not in history
    assert env_files.strip() == ""


def test_the_service_image_carries_no_test_code(images: Engine) -> None:
    listing = images.docker("run", "--rm", SERVICE_IMAGE, "ls", "-A", "/app").split()
    dev_tool = images.docker(
        "run",
        "--rm",
        SERVICE_IMAGE,
        "python",
        "-c",
        "import importlib.util as u; print(u.find_spec('pytest') is None)",
    )

    assert sorted(listing) == ["agents", "app", "calls", "tools"]
    assert dev_tool.strip() == "True"


def test_the_image_size_is_recorded(images: Engine) -> None:
    size = inspect(images, SERVICE_IMAGE)["Size"]
    base = inspect(images, "python:3.12-slim-bookworm")["Size"]
    venv_mb = images.docker("run", "--rm", SERVICE_IMAGE, "du", "-sm", "/opt/venv").split()[0]
    FIGURES["image size (MB)"] = round(size / 1e6)
    FIGURES["image size over its base (MB)"] = round((size - base) / 1e6)
    FIGURES["/opt/venv (MB)"] = int(venv_mb)

    assert size > base


def test_a_code_only_change_rebuilds_without_the_dependency_layers(
    images: Engine, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "uv.lock"):
        shutil.copy2(ROOT / name, context / name)
    skip = shutil.ignore_patterns("__pycache__", "offline")
    for folder in ("agents", "app", "calls", "tools", "testkit", "deploy"):
        shutil.copytree(ROOT / folder, context / folder, ignore=skip)
    with (context / "app" / "__init__.py").open("a") as module:
        module.write("\n# a code-only change\n")

    start = time.monotonic()
    images.docker(
        "build",
        "-q",
        "--target",
        "service",
        "-t",
        "plantree:code-change",
        str(context),
        timeout=600,
    )
    FIGURES["rebuild after a code-only change (s)"] = round(time.monotonic() - start, 1)
    before = inspect(images, SERVICE_IMAGE)["RootFS"]["Layers"]
    after = inspect(images, "plantree:code-change")["RootFS"]["Layers"]
    base = inspect(images, "python:3.12-slim-bookworm")["RootFS"]["Layers"]
    images.docker("image", "rm", "plantree:code-change")

    # The user and /opt/venv layers follow the base's; only the code layers differ.
    assert after[: len(base) + 2] == before[: len(base) + 2]
    assert after != before
