"""The layer order of pyproject.toml's import-linter contracts holds, and breaking it fails."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("wiring", "memoryproject", "profiles", "transcripts", "memories")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The four packages and pyproject.toml, copied so a test can add an import."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}\n")


def test_the_contracts_hold_on_the_checkout() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_an_upward_import_breaks_the_layers(copy: Path) -> None:
    # given: the short-term store importing the review layer, two layers up
    _append(copy / "memories" / "stm" / "services.py", "from memories.review import promotion")
    # when
    result = _lint(copy)
    # then
    assert result.returncode != 0
    assert "Layers flow one way BROKEN" in result.stdout
    assert "memories.stm.services -> memories.review.promotion" in result.stdout


def test_a_lazy_upward_import_breaks_the_layers_too(copy: Path) -> None:
    # Layer 1 reaching into short-term memory from inside a function
    _append(
        copy / "profiles" / "services" / "api_keys.py",
        "def _peek():\n    from memories.stm.store import stm_store\n    return stm_store",
    )
    result = _lint(copy)
    assert result.returncode != 0
    assert "profiles.services.api_keys -> memories.stm.store" in result.stdout


def test_a_service_importing_an_api_module_breaks_the_contract(copy: Path) -> None:
    _append(copy / "memories" / "review" / "export.py", "from memories.review import apis")
    result = _lint(copy)
    assert result.returncode != 0
    assert "Only urls.py imports an apis.py BROKEN" in result.stdout


def test_every_module_of_the_four_packages_has_a_layer() -> None:
    # A module the contract does not name is checked by nobody: name each one in a layer.
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (layers,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    named = {
        name.strip()
        for layer in layers["layers"]
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    }
    unnamed = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            module = ".".join(parts)
            prefixes = {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
            if module not in PACKAGES and not prefixes & named:
                unnamed.append(module)
    assert unnamed == []
