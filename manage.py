#!/usr/bin/env python
import os
import sys
from pathlib import Path

# The key scripts/run.sh keeps for a local service; read, never written, from here.
LOCAL_SECRET_KEY = Path(__file__).resolve().parent / "var" / "secret_key"


def use_local_secret_key() -> None:
    """Take SECRET_KEY from var/secret_key when it is unset and the file holds one, as
    run.sh does, so commands run beside a local service share its key."""
    if os.environ.get("SECRET_KEY"):
        return
    try:
        key = LOCAL_SECRET_KEY.read_text().strip()
    except FileNotFoundError:
        return
    if key:
        os.environ["SECRET_KEY"] = key


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    use_local_secret_key()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
