"""Summarise a fuzz run of scripts/fuzz.sh: requests sent, answers by operation and status,
failures grouped by check and operation with one sample request each, errors of the fuzzer
(timeouts, dropped connections), 5xx answers in the web log and failed worker tasks.

    .venv/bin/python scripts/fuzz_summary.py var/fuzz-<run>

Exits 1 when anything failed, so the shell script can fail on it.
"""

from __future__ import annotations

import base64
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

SAMPLE_CHARS = 300


def _text(payload: Any) -> str:
    if not payload:
        return ""
    if isinstance(payload, dict) and "$base64" in payload:
        raw = base64.b64decode(payload["$base64"])
        text = raw.decode("utf-8", "backslashreplace")
    else:
        text = payload if isinstance(payload, str) else json.dumps(payload)
    return text if len(text) <= SAMPLE_CHARS else f"{text[:SAMPLE_CHARS]}... ({len(text)} chars)"


def _events(directory: Path) -> list[dict[str, Any]]:
    events = []
    for report in sorted(directory.glob("ndjson-*.ndjson")):
        with report.open() as lines:
            events.extend(json.loads(line) for line in lines if line.strip())
    return events


def summarise(directory: Path) -> dict[str, Any]:
    requests = 0
    statuses: Counter[tuple[str, int]] = Counter()
    failures: dict[tuple[str, str, str], dict[str, Any]] = {}
    failure_counts: Counter[tuple[str, str, str]] = Counter()
    errors: dict[tuple[str, str], dict[str, Any]] = {}
    error_counts: Counter[tuple[str, str]] = Counter()
    for event in _events(directory):
        if "NonFatalError" in event:
            error = event["NonFatalError"]
            key = (error.get("label", ""), error["value"]["type"])
            error_counts[key] += 1
            errors.setdefault(key, {"message": error["value"]["message"][:SAMPLE_CHARS]})
            continue
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished["recorder"]
        label = recorder["label"]
        interactions = recorder.get("interactions", {})
        for interaction in interactions.values():
            requests += 1
            response = interaction.get("response") or {}
            statuses[(label, response.get("status_code", 0))] += 1
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                if check["status"] != "failure":
                    continue
                failure = check.get("failure_info", {}).get("failure", {})
                key = (check["name"], failure.get("title", ""), label)
                failure_counts[key] += 1
                if key in failures:
                    continue
                interaction = interactions.get(case_id, {})
                request = interaction.get("request", {})
                response = interaction.get("response") or {}
                failures[key] = {
                    "message": failure.get("message", "")[:SAMPLE_CHARS],
                    "request": f"{request.get('method', '')} {request.get('uri', '')}",
                    "body": _text(request.get("body")),
                    "status": response.get("status_code"),
                    "response": _text(response.get("content")),
                }
    return {
        "requests": requests,
        "statuses": statuses,
        "failures": failures,
        "failure_counts": failure_counts,
        "errors": errors,
        "error_counts": error_counts,
        "server_errors": _server_errors(directory / "web.log"),
        "worker_errors": _worker_errors(directory / "worker.log"),
    }


def _server_errors(log: Path) -> list[str]:
    """5xx answers and errors the web server logged (one JSON object a line)."""
    found = []
    if not log.exists():
        return found
    for line in log.open(errors="replace"):
        try:
            record = json.loads(line)
        except ValueError:
            if "Traceback" in line or "[CRITICAL]" in line or "WORKER TIMEOUT" in line:
                found.append(line.strip()[:SAMPLE_CHARS])
            continue
        if int(record.get("status") or 0) >= 500 or record.get("level") in ("ERROR", "CRITICAL"):
            found.append(f"{record.get('message', '')} {record.get('exc_info', '')}"[:SAMPLE_CHARS])
    return found


def _worker_errors(log: Path) -> list[str]:
    """Tasks the worker failed on (Celery logs them at ERROR)."""
    if not log.exists():
        return []
    return [
        line.strip()[:SAMPLE_CHARS]
        for line in log.open(errors="replace")
        if '"level": "ERROR"' in line or "raised unexpected" in line or "[ERROR" in line
    ]


def report(result: dict[str, Any]) -> list[str]:
    """The summary as lines of text."""
    lines = [f"\n==> fuzz summary: {result['requests']} requests"]
    by_status: dict[str, list[str]] = defaultdict(list)
    for (label, status), count in sorted(result["statuses"].items()):
        by_status[label].append(f"{status}×{count}")
    for label, counts in sorted(by_status.items()):
        lines.append(f"    {label:45} {' '.join(counts)}")
    total = sum(result["failure_counts"].values())
    lines.append(f"==> {total} failing test cases in {len(result['failures'])} groups")
    for key, sample in sorted(result["failures"].items()):
        check, title, label = key
        lines.append(f"  - {check} ({title}) on {label}: {result['failure_counts'][key]} cases")
        lines.append(f"      e.g. {sample['request']} {sample['body']}")
        lines.append(f"      -> {sample['status']} {sample['response']}")
    for key, sample in sorted(result["errors"].items()):
        label, kind = key
        lines.append(f"  - fuzzer error {kind} on {label}: {result['error_counts'][key]}×")
        lines.append(f"      {sample['message']}")
    for name, found in (("web server", "server_errors"), ("worker", "worker_errors")):
        logged = result[found]
        lines.append(f"==> {len(logged)} errors logged by the {name}")
        lines.extend(f"      {line}" for line in logged[:5])
    return lines


def main() -> int:
    result = summarise(Path(sys.argv[1]))
    sys.stdout.write("\n".join(report(result)) + "\n")
    failed = (
        result["failure_counts"]
        or result["errors"]
        or result["server_errors"]
        or result["worker_errors"]
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
