"""The deployment files (Dockerfile, compose.yaml, memory.env.example, .dockerignore) agree with
the code: the settings they pass exist, the commands are those scripts/run.sh runs, every store
the web waits for has a health check, and the image's Python is one the project supports.

No container runs here; these read the files (docs/deploy.md says what else was checked).
"""

from __future__ import annotations

import inspect
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import gunicorn.config
import pytest
import yaml
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
PROJECT_IMAGE = "agent-memory-service"
STORE_URLS = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "ELASTICSEARCH_URL", "MILVUS_URI")


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _project_services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    return {
        name: service
        for name, service in services.items()
        if str(service.get("image", "")).startswith(PROJECT_IMAGE)
    }


def _settings_names() -> set[str]:
    """Every variable memoryproject/settings.py reads through `env.<type>("NAME", ...)`."""
    source = (ROOT / "memoryproject" / "settings.py").read_text()
    return set(re.findall(r'\benv\.\w+\(\s*"([A-Z][A-Z0-9_]*)"', source))


def _env_file_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(line.split("=", 1)[0].strip())
    return names


def _run_sh_command(name: str) -> list[str]:
    """The command line run.sh gives `start NAME ...`, from its executable on (continuation
    lines joined), as shell words."""
    text = (ROOT / "scripts" / "run.sh").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.strip().startswith(f"start {name} "))
    words = shlex.split(line, posix=False)
    start = next(i for i, word in enumerate(words) if word.startswith(".venv/bin/"))
    return [words[start].removeprefix(".venv/bin/"), *words[start + 1 :]]


def _is_variable(word: str) -> bool:
    return "$" in word


def _same_command(ours: list[str], theirs: list[str]) -> bool:
    """Word for word, where a word holding a variable (a shell one in run.sh, an interpolated
    one in compose.yaml) matches any value."""
    return len(ours) == len(theirs) and all(
        a == b or _is_variable(a) or _is_variable(b) for a, b in zip(ours, theirs, strict=True)
    )


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


# --- settings ------------------------------------------------------------------------------------
def test_every_variable_passed_to_the_service_is_a_setting() -> None:
    # Read by the processes around Django: gunicorn.conf.py's child_exit hook (and
    # prometheus-client) read PROMETHEUS_MULTIPROC_DIR; gunicorn reads WEB_CONCURRENCY.
    conf = (ROOT / "gunicorn.conf.py").read_text()
    around = {"PROMETHEUS_MULTIPROC_DIR", "WEB_CONCURRENCY"}
    assert '"PROMETHEUS_MULTIPROC_DIR"' in conf
    assert '"WEB_CONCURRENCY"' in inspect.getsource(gunicorn.config)
    known = _settings_names() | around

    passed: dict[str, set[str]] = {}
    for name, service in _project_services().items():
        passed[name] = set(service.get("environment", {}))
        assert service["env_file"] == "memory.env", name
    passed["memory.env.example"] = _env_file_names(ROOT / "memory.env.example")

    unknown = {where: sorted(names - known) for where, names in passed.items() if names - known}
    assert not unknown, f"not read by the service: {unknown}"


def test_the_service_is_pointed_at_the_compose_stores() -> None:
    services = _project_services()
    assert set(services) == {"migrate", "web", "worker", "beat"}
    for name, service in services.items():
        environment = service["environment"]
        missing = [url for url in STORE_URLS if url not in environment]
        assert not missing, f"{name} would use the local defaults for {missing}"
        assert "@postgres:5432/" in environment["DATABASE_URL"]
        assert environment["ELASTICSEARCH_URL"] == "http://elasticsearch:9200"
        assert environment["MILVUS_URI"] == "http://milvus:19530"
        for setting in ("MILVUS_INDEX_PARAMS", "MILVUS_SEARCH_PARAMS"):
            assert isinstance(json.loads(environment[setting]), dict)
    assert "SECRET_KEY" in _env_file_names(ROOT / "memory.env.example")
    assert "SECRET_KEY" in _settings_names()


# --- commands ------------------------------------------------------------------------------------
def test_the_image_starts_gunicorn_as_run_sh_does() -> None:
    cmd_line = next(line for line in _dockerfile().splitlines() if line.startswith("CMD "))
    command = json.loads(cmd_line.removeprefix("CMD "))
    theirs = _run_sh_command("web")
    # Same executable, config file and WSGI module; bound to every interface in a container.
    start = ["gunicorn", "--config", "gunicorn.conf.py", "memoryproject.wsgi"]
    assert command[:4] == theirs[:4] == start
    assert command[command.index("--bind") + 1] == "0.0.0.0:8000"
    assert command[command.index("--log-level") + 1] == theirs[theirs.index("--log-level") + 1]
    assert "web" not in {n for n, s in _project_services().items() if "command" in s}


@pytest.mark.parametrize("role", ["worker", "beat"])
def test_worker_and_beat_run_the_commands_of_run_sh(role: str) -> None:
    # run.sh's `"${celery_quiet[@]}"` is --quiet at its default log level (WARNING).
    theirs = [
        "--quiet" if word == '"${celery_quiet[@]}"' else word for word in _run_sh_command(role)
    ]
    ours = _project_services()[role]["command"]
    assert ours[:3] == ["celery", "-A", "memoryproject"]
    assert role in ours
    assert _same_command(ours, theirs), f"{ours} != {theirs}"


def test_migrate_prepares_every_store_before_the_others_start() -> None:
    services = _project_services()
    script = services["migrate"]["command"][-1]
    assert "manage.py migrate --noinput" in script
    assert script.index("migrate --noinput") < script.index("manage.py ensure_stores")
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name


# --- health and restarts -------------------------------------------------------------------------
def test_everything_the_web_waits_for_has_a_health_check() -> None:
    services = _compose()["services"]
    web = services["web"]
    assert "/readyz" in " ".join(web["healthcheck"]["test"])
    for name, dependency in web["depends_on"].items():
        if name == "migrate":
            continue
        assert dependency["condition"] == "service_healthy", name
        assert "test" in services[name].get("healthcheck", {}), name
    stores = [name for name in services if name not in _project_services()]
    assert {"postgres", "redis", "elasticsearch", "milvus", "etcd", "minio"} <= set(stores)
    for name in stores:
        assert "test" in services[name].get("healthcheck", {}), f"{name} has no health check"


def test_restart_policies_and_named_volumes() -> None:
    compose = _compose()
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        expected = "no" if name == "migrate" else "unless-stopped"
        assert service.get("restart") == expected, name
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source in declared, f"{name} mounts {source!r}, not a named volume"
    redis_command = compose["services"]["redis"]["command"]
    assert redis_command[redis_command.index("--appendonly") + 1] == "yes"


# --- the image -----------------------------------------------------------------------------------
def test_the_base_image_python_is_supported() -> None:
    dockerfile = _dockerfile()
    default = re.search(r"^ARG PYTHON_VERSION=(\S+)$", dockerfile, re.M)
    assert default
    bases = re.findall(r"^FROM python:(\S+?)-slim", dockerfile, re.M)
    assert bases and all(b == "${PYTHON_VERSION}" for b in bases), bases
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requires = SpecifierSet(pyproject["project"]["requires-python"])
    assert requires.contains(default.group(1)), (default.group(1), str(requires))


def test_the_image_installs_no_local_stand_ins_and_runs_as_its_own_user() -> None:
    dockerfile = _dockerfile()
    assert "['project']['dependencies']" in dockerfile
    assert "pip install --no-deps -e ." in dockerfile
    assert "[local]" not in dockerfile and "[dev]" not in dockerfile
    assert "collectstatic --noinput" in dockerfile
    users = re.findall(r"^USER (\S+)$", dockerfile, re.M)
    assert users and users[-1] not in {"root", "0"}


def test_the_build_context_keeps_secrets_out_and_what_the_image_needs_in() -> None:
    patterns = _env_file_names(ROOT / ".dockerignore")
    assert {".env", "*.env", ".venv", "var/", ".git"} <= patterns
    needed = ["pyproject.toml", "README.md", "manage.py", "gunicorn.conf.py", "templates"]
    needed += ["memoryproject", "memories", "profiles", "transcripts", "wiring"]
    for path in needed:
        assert (ROOT / path).exists(), path
        assert not any(
            path == pattern.rstrip("/") or Path(path).match(pattern) for pattern in patterns
        ), f"{path} is left out of the build context"
