from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryproject.env import ConfigError, Env

ROOT = Path(__file__).resolve().parents[2]


def test_typed_values_and_defaults() -> None:
    env = Env({"A": "yes", "N": "12", "L": "a, b,,c", "J": '{"x": 1}'})
    assert env.boolean("A") is True
    assert env.integer("N", minimum=1) == 12
    assert env.csv_list("L") == ["a", "b", "c"]
    assert env.json_object("J") == {"x": 1}
    assert Env({"F": "0.03"}).number("F", minimum=0, maximum=1) == 0.03
    assert env.string("MISSING", "fallback") == "fallback"


def test_database_url_becomes_a_django_database() -> None:
    db = Env({"DATABASE_URL": "postgres://me:p%40ss@db.example:6543/memory"}).database(
        "DATABASE_URL"
    )
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "memory",
        "me",
        "p@ss",
        "db.example",
        "6543",
    )


@pytest.mark.parametrize(
    ("environ", "call", "message"),
    [
        ({}, lambda e: e.string("SECRET_KEY"), "SECRET_KEY: is required"),
        ({"DEBUG": "maybe"}, lambda e: e.boolean("DEBUG"), "DEBUG: expected true/false"),
        ({"N": "x"}, lambda e: e.integer("N"), "N: expected an integer"),
        ({"N": "0"}, lambda e: e.integer("N", minimum=1), "N: must be at least 1"),
        ({"R": "http://h:6379"}, lambda e: e.url("R", schemes=("redis",)), "R: expected a URL"),
        ({"R": "redis://h:99999"}, lambda e: e.url("R", schemes=("redis",)), "invalid port"),
        ({"D": "postgres://h:5432/"}, lambda e: e.database("D"), "D: names no database"),
        ({"J": "[1]"}, lambda e: e.json_object("J"), "J: must be a JSON object"),
        ({"F": "nan"}, lambda e: e.number("F"), "F: expected a number"),
        ({"F": "-0.1"}, lambda e: e.number("F", minimum=0), "F: must be at least 0"),
        ({"F": "3"}, lambda e: e.number("F", maximum=2), "F: must be at most 2"),
    ],
)
def test_bad_values_name_the_variable(environ, call, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        call(Env(environ))
    assert message in str(raised.value)


def test_a_bad_setting_stops_start_up_with_one_clear_line() -> None:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    }
    environ.update(SECRET_KEY="x", DATABASE_URL="mysql://root@127.0.0.1/test")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "configuration error: DATABASE_URL: expected a URL starting with postgres or postgresql://"
    ]


def _manage_py_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a copy of manage.py from `folder` (its var/ is the one it reads) without SECRET_KEY."""
    (folder / "manage.py").write_text((ROOT / "manage.py").read_text())
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SECRET_KEY", "DJANGO_SETTINGS_MODULE"}
    }
    environ["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, str(folder / "manage.py"), *args],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_manage_py_reads_the_key_run_sh_keeps(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "secret_key").write_text("key-of-the-local-service\n")
    result = _manage_py_in(
        tmp_path, "shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "key-of-the-local-service"


def test_manage_py_without_the_key_file_still_asks_for_secret_key(tmp_path: Path) -> None:
    result = _manage_py_in(tmp_path, "check")
    assert result.returncode == 1
    assert "SECRET_KEY: is required" in result.stderr
    assert not (tmp_path / "var").exists()  # manage.py never makes the key itself
