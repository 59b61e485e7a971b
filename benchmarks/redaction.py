"""Redaction cost per 1 KB of text, so it is known not to slow the write path.

Texts of 1,024 characters are built from Chinese and English sentences like those agents
write to memory; in `clean` none holds sensitive data, in `sensitive` every fourth sentence
holds a card number, an ID number, a password, a JWT, a service key or an IBAN. Each text is
redacted `--runs` times by the built-in detectors, and again with three tenant patterns; the
script prints the median and p95 microseconds per 1 KB of CPU time (what redaction costs,
robust on a shared machine) and the median wall time. Nothing is written anywhere.

    .venv/bin/python benchmarks/redaction.py   # --runs 2000
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memoryproject.redaction import DEFAULT, Redactor  # noqa: E402

CLEAN = [
    "createOrder 在 prod-k8s 超时，数据库已排除。",
    "Don't restart payment-service during business hours.",
    "We'll go with raising the pool size to 64 for order-exec.",
    "用户偏好先给结论，再给细节。",
    "tool call_7: TimeoutException, HTTP 504 — payment-service",
    "The staging cluster runs Kubernetes 1.29 and is restored nightly at 02:00 UTC.",
    "PR #4121 merged; trace 1234567890123 took 40 ms.",
    "记住：发布前必须先在 staging 验证。",
]
SENSITIVE = [
    "我的银行卡号是 6222 0212 3456 7890 123，帮我记住。",
    "refund to card 4111-1111-1111-1111 only.",
    "身份证号 11010519491231002X。",
    "my password is CorrectHorse99, keep it.",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1XzQyIn0.c2lnbmF0dXJl",
    "deploy with AKIAIOSFODNN7EXAMPLE and ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8.",
    "工资打到 IBAN DE89 3704 0044 0532 0130 00。",
]
TENANT_PATTERNS = [r"EMP-\d{6}", r"\binternal-[a-z0-9]{20,40}\b", r"合同编号\s*[A-Z]{2}\d{8}"]


def texts(kind: str, count: int, rng: random.Random) -> list[str]:
    found = []
    for _ in range(count):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < 1024:
            pool = SENSITIVE if kind == "sensitive" and len(parts) % 4 == 3 else CLEAN
            parts.append(rng.choice(pool))
        found.append(" ".join(parts)[:1024])
    return found


def measure(redactor: Redactor, samples: list[str], runs: int) -> tuple[list[float], list[float]]:
    cpu, wall = [], []
    for index in range(runs):
        text = samples[index % len(samples)]
        started, started_cpu = time.perf_counter(), time.thread_time()
        redactor.text(text)
        cpu.append((time.thread_time() - started_cpu) * 1e6)
        wall.append((time.perf_counter() - started) * 1e6)
    return sorted(cpu), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(7)
    tenant = Redactor([re.compile(p, re.IGNORECASE) for p in TENANT_PATTERNS])
    print(f"{'text (1 KB)':<12} {'redactor':<18} {'CPU median µs':>14} {'p95':>6} {'wall µs':>8}")
    for kind in ("clean", "sensitive"):
        samples = texts(kind, 50, rng)
        for name, redactor in (("built-in", DEFAULT), ("+3 tenant patterns", tenant)):
            measure(redactor, samples, 100)  # warm up
            cpu, wall = measure(redactor, samples, args.runs)
            p95 = cpu[int(len(cpu) * 0.95)]
            print(
                f"{kind:<12} {name:<18} {statistics.median(cpu):>14.1f} {p95:>6.0f}"
                f" {statistics.median(wall):>8.1f}"
            )


if __name__ == "__main__":
    main()
