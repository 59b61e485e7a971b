"""Shared start-up of the benchmark scripts: Django settings and LoCoMo turns."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"


def django_setup(*, migrate: bool = False, database: str = "", **environ: str) -> None:
    """Configure Django from the project settings; `environ` overrides variables first.

    Unless DATABASE_URL is given (in `environ` or the environment), the benchmark works in a
    database of its own on the configured server, `bench_<script>`, created and migrated on
    first use and inherited by the service processes it starts: workers of two benchmarks
    sharing one database would drain each other's outboxes into their own indexes (`database`
    names another script's, for a script that reads what that one kept). With `migrate`, bring
    the database's schema up to date (as run.sh does).
    """
    sys.path.insert(0, str(ROOT))
    secret_file = ROOT / "var" / "secret_key"
    if "SECRET_KEY" not in os.environ:
        os.environ["SECRET_KEY"] = (
            secret_file.read_text().strip() if secret_file.exists() else "benchmark-only"
        )
    os.environ.update(environ)
    if "DATABASE_URL" not in os.environ:
        os.environ["DATABASE_URL"], created = own_database(database or Path(sys.argv[0]).stem)
        migrate = migrate or created
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def own_database(script: str) -> tuple[str, bool]:
    """The URL of `bench_<script>` on the default database server, and whether it was created."""
    import psycopg

    name = "bench_" + re.sub(r"[^a-z0-9_]", "_", script.lower())
    server = DEFAULT_DATABASE_URL.rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}", not exists


def locomo_turns() -> list[dict[str, str]]:
    """Every dialogue turn of the LoCoMo development split, as transcript events."""
    conversations = json.loads(LOCOMO.read_text())
    turns = []
    for conversation in conversations:
        sessions = conversation["conversation"]
        for name, value in sessions.items():
            if name.startswith("session_") and isinstance(value, list):
                for turn in value:
                    role = "user" if turn["speaker"] == sessions["speaker_a"] else "assistant"
                    turns.append({"role": role, "content": f"{turn['speaker']}: {turn['text']}"})
    return turns


def clear_prefix_keys() -> None:
    """Delete the Redis keys written under this run's REDIS_KEY_PREFIX (e.g. query caches)."""
    from memoryproject import redis_keys as keys
    from memoryproject.redis_client import redis_connection

    client = redis_connection()
    stale = list(client.scan_iter(match=keys.all_keys_pattern(), count=5000))
    for start in range(0, len(stale), 5000):
        client.delete(*stale[start : start + 5000])


# --- LoCoMo conversations -------------------------------------------------------------------
def session_names(conversation: dict) -> list[str]:
    sessions = conversation["conversation"]
    return sorted(
        (n for n in sessions if re.fullmatch(r"session_\d+", n)), key=lambda n: int(n[8:])
    )


def session_start(raw: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware datetime (UTC)."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares image: {turn['blip_caption']}]"
    return text


def evidence_ids(raw: list[str], known: set[str]) -> list[str]:
    """Split malformed entries ("D8:6; D9:17"), repair "D:11:26" and "D30:05"; keep known ids."""
    found = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if match and f"D{match.group(1)}:{match.group(2)}" in known:
                found.append(f"D{match.group(1)}:{match.group(2)}")
    return sorted(set(found))
