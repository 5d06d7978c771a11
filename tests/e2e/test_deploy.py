"""Deployment files without an engine: the compose file against the Compose Specification's
schema and the rules it keeps, and the Dockerfile's install script run for real. The image
built and the stack run are tests/deploy."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / ".cache" / "compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def test_the_compose_file_is_valid_against_the_compose_spec(compose: dict[str, Any]) -> None:
    assert SCHEMA.exists(), "run `make test` (it fetches the Compose Specification schema)"
    schema = json.loads(SCHEMA.read_text())

    validator = jsonschema.Draft201909Validator(schema)  # the schema's own draft

    validator.validate(compose)

    broken = {**compose, "services": {"api": {"depends_on": {"db": {"condition": "soon"}}}}}
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


def test_the_test_override_is_valid_and_adds_only_the_simulator() -> None:
    schema = json.loads(SCHEMA.read_text())
    override = yaml.safe_load((ROOT / "tests" / "deploy" / "compose.test.yml").read_text())

    jsonschema.Draft201909Validator(schema).validate(override)
    assert sorted(override["services"]) == ["api", "gemini-sim", "worker"]
    assert override["services"]["gemini-sim"]["build"]["target"] == "simulator"
    assert "ports" not in override["services"]["gemini-sim"]


def test_the_api_and_the_workers_wait_for_healthy_postgres_and_redis(
    compose: dict[str, Any],
) -> None:
    api, worker, db = (compose["services"][name] for name in ("api", "worker", "db"))

    for service in (api, worker):
        assert service["depends_on"] == {
            "db": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
        }
        assert service["init"] is True
    assert "healthcheck" in db
    assert "healthcheck" in compose["services"]["redis"]
    assert api["environment"]["LATS_DATABASE_URL"].startswith("postgresql://")
    assert db["volumes"] == ["pgdata:/var/lib/postgresql/data"]
    assert "pgdata" in compose["volumes"]
    assert (ROOT / ".env.example").exists()


def test_keys_pass_through_from_the_environment_and_are_never_written_in(
    compose: dict[str, Any],
) -> None:
    for name in ("api", "worker"):
        environment = compose["services"][name]["environment"]

        assert environment["GOOGLE_API_KEY"] is None
        assert environment["LATS_API_KEYS"] is None
        assert environment["LATS_MODEL"] is None


def test_two_api_replicas_and_two_workers_run_one_image(compose: dict[str, Any]) -> None:
    api, worker = compose["services"]["api"], compose["services"]["worker"]

    assert api["deploy"]["replicas"] == 2
    assert worker["deploy"]["replicas"] == 2
    assert api["image"] == worker["image"]
    assert api["command"][:5] == ["python", "-m", "app", "serve", "--no-worker"]
    assert worker["command"] == ["python", "-m", "app", "worker"]


def test_only_the_proxy_is_published_and_only_on_loopback(compose: dict[str, Any]) -> None:
    published = {name: s.get("ports", []) for name, s in compose["services"].items()}

    assert [name for name, ports in published.items() if ports] == ["proxy"]
    assert all(str(port).startswith("127.0.0.1:") for port in published["proxy"])
    # Replicas cannot share a published port: the proxy reaches them on the compose network.
    assert compose["services"]["proxy"]["depends_on"] == {"api": {"condition": "service_healthy"}}
    assert (ROOT / "deploy" / "nginx.conf").exists()


def test_the_dockerfile_runs_the_install_script_as_a_non_root_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()

    assert "deploy/install.sh /opt/venv postgres local" in dockerfile
    # No parser directive: the engine's built-in frontend builds it, with no registry.
    assert not re.match(r"(#[^\n]*\n)*#\s*syntax\s*=", dockerfile)
    runtime = dockerfile.split("AS runtime\n", 1)[1]
    assert "install.sh" not in runtime  # nothing is built in the final image
    assert "USER lats" in runtime
    service = dockerfile.split("AS service\n", 1)[1]
    assert "HEALTHCHECK" in service
    assert "/healthz" in service
    assert "testkit" not in service


def test_the_install_script_builds_a_working_runtime(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run(
        ["sh", "deploy/install.sh", str(venv), "postgres"], cwd=ROOT, check=True, timeout=600
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    probe = subprocess.run(
        [
            str(venv / "bin/python"),
            "-c",
            "import app.main, langgraph.checkpoint.postgres.aio, psycopg_pool; print('ok')",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    dev_tool = subprocess.run(
        [str(venv / "bin/python"), "-c", "import pytest"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=60,
    )

    assert probe.stdout.strip() == "ok", probe.stderr
    assert dev_tool.returncode != 0  # dev dependencies stay out of the image
