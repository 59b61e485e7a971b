"""Run the local Milvus server: milvus-lite 2.5's C++ binary (Milvus's own engine) on loopback.

    python scripts/local_milvus.py DATA_DIR HOST:PORT

The process replaces itself with the server (exec), so the caller's PID is the server's and
stopping it by PID (SIGTERM) stops the server; its data in DATA_DIR survives a restart.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import milvus_lite

DB_FILE = "memory.db"  # the binary's file name rule: [A-Za-z0-9._-], at most 36 characters


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    data_dir, address = Path(argv[0]).absolute(), argv[1]
    host = address.rsplit(":", 1)[0]
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        raise SystemExit(f"local Milvus listens on loopback only, not {host}")
    data_dir.mkdir(parents=True, exist_ok=True)
    lib = Path(milvus_lite.__file__).parent / "lib"
    binary = lib / "milvus"
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: milvus-lite 2.5 (pinned in pyproject) is needed")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        part for part in (str(lib), os.environ.get("LD_LIBRARY_PATH", "")) if part
    )
    level = os.environ.get("MILVUS_LOG_LEVEL", "ERROR")
    os.chdir(data_dir)
    os.execve(str(binary), [str(binary), str(data_dir / DB_FILE), address, level], env)


if __name__ == "__main__":
    main(sys.argv[1:])
