"""Checking a tenant's own redaction pattern before it is stored: a pattern that could hang
every writer (catastrophic backtracking) or match everything is refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import lru_cache
from typing import Any

MAX_PATTERN_CHARS = 500
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_PROBE_LENGTH = 5000
_PROBE_BUDGET_SECONDS = 0.1
_PROBE_TIMEOUT_SECONDS = 3.0
_PROBE = r"""
import json, re, sys, time
pattern = re.compile(json.load(sys.stdin), re.IGNORECASE)
n = int(sys.argv[1])
probes = ["a" * n, "a" * n + "!", "1" * n + "x", " " * n + "x", "1 " * (n // 2) + "x",
          "测" * n, "aA1 -_.:=@/" * (n // 11), "ab" * (n // 2) + "!", "\n" * n + "x"]
worst = 0.0
for probe in probes:
    started = time.perf_counter()
    for _ in pattern.finditer(probe):
        pass
    worst = max(worst, time.perf_counter() - started)
print(worst)
"""


def _nested_repeat(items: Any, inside_repeat: bool = False) -> bool:
    """Whether a parsed pattern repeats something that itself repeats (`(a+)+`)."""
    from re import _parser  # type: ignore[attr-defined]

    for op, argument in items:
        name = str(op)
        if name in _REPEATS:
            low, high, sub = argument
            repeats = high == _parser.MAXREPEAT or high > 1
            if repeats and inside_repeat:
                return True
            if _nested_repeat(sub, inside_repeat or repeats):
                return True
        elif name == "SUBPATTERN":
            if _nested_repeat(argument[-1], inside_repeat):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(branch, inside_repeat) for branch in argument[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _nested_repeat(argument[1], inside_repeat):
                return True
        elif name in ("GROUPREF", "GROUPREF_EXISTS"):
            return True  # backreferences make matching exponential in general
    return False


def pattern_problem(pattern: str) -> str | None:
    """Why a tenant's redaction pattern is refused, or None when it is safe to run.

    Refused: not a regular expression, longer than 500 characters, matching the empty text,
    nested repetition or backreferences, or slow on a set of adversarial 5,000-character
    probes (run in a child process with a hard timeout, so a catastrophic pattern cannot hang
    the caller).
    """
    from re import _parser  # type: ignore[attr-defined]

    if len(pattern) > MAX_PATTERN_CHARS:
        return f"Longer than {MAX_PATTERN_CHARS} characters."
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
        parsed = _parser.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"Not a valid pattern: {exc}"
    if compiled.fullmatch("") is not None:
        return "Matches the empty text."
    if _nested_repeat(list(parsed)):
        return "Repeats a repetition or uses a backreference, which can take exponential time."
    return _probe_problem(pattern)


@lru_cache(maxsize=256)
def _probe_problem(pattern: str) -> str | None:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE, str(_PROBE_LENGTH)],
            input=json.dumps(pattern),
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "Too slow on long input (catastrophic backtracking)."
    if done.returncode != 0:
        return "Could not be tried on sample input."
    if float(done.stdout.strip() or "inf") > _PROBE_BUDGET_SECONDS:
        return "Too slow on long input (it backtracks heavily)."
    return None
