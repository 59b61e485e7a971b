"""Fixtures of the memory layers' tests: a real Celery worker against the real broker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memoryproject.celery import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker_env() -> dict[str, str]:
    """Settings of the worker's own process (a test overrides this fixture to change them)."""
    return {}


@pytest.fixture
def worker(tmp_path, worker_env):
    settings_dict = connection.settings_dict
    env = {
        **os.environ,
        **worker_env,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        # the worker must use the database pytest created, not the configured one
        "DATABASE_URL": (
            f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
            f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}"
        ),
    }
    log_path = tmp_path / "worker.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryproject",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    process.log_path = log_path  # type: ignore[attr-defined]
    yield process
    process.terminate()
    process.wait(timeout=30)
    log.close()


@pytest.fixture
def publish_to_broker():
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True
