"""The fault suite: no acknowledged write is lost whatever the fault, and a store that stops
answering costs a request one timeout.

The script starts a service of its own: gunicorn (a worker per client thread, and one for the
/readyz poller), one Celery worker and beat under key, index, collection and queue prefixes of
their own, with

- a Redis server of its own (cache, short-term memory and broker), with an append-only file
  synced on every write (`--appendfsync always`): short-term memory and the task queue are as
  durable as Redis's own persistence, so a Redis without it loses them when it is killed;
- a TCP proxy in front of each shared store, PostgreSQL, the Elasticsearch stand-in
  (ELASTICSEARCH_URL) and Milvus (MILVUS_URI), for the service only: it can stop forwarding
  (a frozen server: connections are accepted, nothing answers) or cut every connection and
  refuse new ones (a killed one). The script's own checks talk to the stores directly;
- a transcript storage folder of its own: a small tmpfs when it can mount one (filled up to
  make storage full, remounted read-only to make it unwritable), else a folder whose
  directories are made read-only (for both).

Shorter bounds than the defaults make the faults show within seconds: PostgreSQL statement
1.5 s, read 2 s, connect 2 s (after a timeout, connections are refused at once for 1 s);
Elasticsearch requests and Milvus calls 2 s, recall's wait for long-term memory and history
2 s; a 2 s heartbeat. The shared stores themselves are never stopped or changed (only this
script's proxies, Redis server, processes and folder).

Under load (client threads appending events, submitting proposals, importing cards and
recalling, every acknowledged write recorded with its id) each fault runs for a few seconds:
Redis killed, Redis frozen (SIGSTOP), PostgreSQL, Elasticsearch and Milvus each frozen and
killed (at their proxies), the worker killed (SIGKILL, then started again), a gunicorn web
worker killed, transcript storage full (ENOSPC) and unwritable (EROFS). After each the fault is
lifted, the script waits for /readyz and the worker, then checks that every write acknowledged
so far is there: events through GET /v1/sessions/{id}/events, short-term items through
GET /v1/memories/{id}, cards through GET /v1/ltm/cards/{id}, each recall's `system` event
(id = the recall id) in its session's transcript, and each event's history entry in both the
history index and the history collection.

It prints a table per fault: requests under way during it by status (2xx / 503 / other), the
longest of them against its bound (the one timeout it meets + 1 s), how soon /readyz turned
red, how long after the fault was lifted it was green again, and the acknowledged writes lost.
Exits non-zero when any acknowledged write is lost.

    ./scripts/faults.sh                       # every fault, 10 s each (about 15 minutes)
    ./scripts/faults.sh --quick               # Redis frozen and PostgreSQL frozen, 5 s each
    ./scripts/faults.sh --faults es-frozen,storage-unwritable --fault-seconds 8 --budget 300
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _service import ServiceRun, free_port, stop, worker_idle
from _setup import ROOT, django_setup

RUN = os.environ.get("FAULTS_RUN") or uuid.uuid4().hex[:8]
SERVICE = ServiceRun("faults", RUN)
VENV = ROOT / ".venv" / "bin"
# The service's bounds for this run (seconds): the fault table holds requests to them.
PG_STATEMENT_MS, PG_READ_MS, PG_CONNECT_S = 1500, 2000, 2
PG_FAIL_FAST_MS = 1000  # after a timeout, connections to PostgreSQL are refused at once
ES_TIMEOUT_MS = 2000  # each Elasticsearch request
MILVUS_TIMEOUT_MS = 2000  # each Milvus call, retries included
RECALL_LTM_TIMEOUT_MS = 2000  # recall's wait for long-term memory and history, all branches
BROKER_SOCKET_S = 2.0  # CELERY_BROKER_SOCKET_TIMEOUT_MS's default; Redis replies: 0.5 s
HEARTBEAT_S = 2
WORKER_STALL_RESTART_S = 10  # a worker that takes nothing while tasks wait restarts this soon
FAULTS = (
    "redis-killed",
    "redis-frozen",
    "pg-frozen",
    "pg-killed",
    "es-frozen",
    "es-killed",
    "milvus-frozen",
    "milvus-killed",
    "worker-killed",
    "web-worker-killed",
    "storage-full",
    "storage-unwritable",
)
QUICK = ("redis-frozen", "pg-frozen")
# The longest a request may take while the fault lasts: the one timeout it meets, plus 1 s. A
# request meeting a frozen PostgreSQL waits once, for its reused connection's health check
# (read timeout) or for a new connection (connect timeout); the process then refuses
# connections to it for DATABASE_FAIL_FAST_MS instead of waiting again. A recall meeting a
# frozen Elasticsearch or Milvus waits for its long-term and history branches at most
# RECALL_LTM_TIMEOUT_MS, any other call one request timeout.
PG_WAIT_S = max(PG_READ_MS / 1000, PG_CONNECT_S)
ES_WAIT_S = max(ES_TIMEOUT_MS, RECALL_LTM_TIMEOUT_MS) / 1000
MILVUS_WAIT_S = max(MILVUS_TIMEOUT_MS, RECALL_LTM_TIMEOUT_MS) / 1000
BOUNDS = {
    "redis-killed": BROKER_SOCKET_S + 1,
    "redis-frozen": BROKER_SOCKET_S + 1,
    "pg-frozen": PG_WAIT_S + 1,
    "pg-killed": PG_WAIT_S + 1,
    "es-frozen": ES_WAIT_S + 1,
    "es-killed": ES_WAIT_S + 1,
    "milvus-frozen": MILVUS_WAIT_S + 1,
    "milvus-killed": MILVUS_WAIT_S + 1,
    "worker-killed": PG_WAIT_S + 1,
    "web-worker-killed": PG_WAIT_S + 1,
    "storage-full": PG_WAIT_S + 1,
    "storage-unwritable": PG_WAIT_S + 1,
}
READYZ_CLIENT_TIMEOUT_S = 4.0  # a load balancer's: /readyz bounds each check at 3 s


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- the stores of this run ------------------------------------------------------------------
class RedisServer:
    """A redis-server of this run's own, persisted to an append-only file in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder)],
            stdout=(self.folder / "redis.log").open("a"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit("redis-server did not start")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
            self.process.wait(10)

    def freeze(self) -> None:
        assert self.process
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process
        os.kill(self.process.pid, signal.SIGCONT)


class StoreProxy:
    """A TCP proxy in front of a shared store (PostgreSQL, Elasticsearch, Milvus) for the service
    under test only: it forwards, stops forwarding (frozen: connections are still accepted and
    nothing answers) or cuts every connection and refuses new ones (killed)."""

    def __init__(self, name: str, upstream: tuple[str, int]) -> None:
        self.name = name
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = int(self.listener.getsockname()[1])
        self.flowing = threading.Event()
        self.flowing.set()
        self.refusing = False
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                self._reset(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                self._reset(client)
                continue
            with self._lock:
                self._open.update((client, server))
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while True:
                self.flowing.wait()
                data = source.recv(65536)
                if not data:
                    break
                self.flowing.wait()  # frozen: what was read is held, as a stopped server would
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                self._close(sock)

    @staticmethod
    def _reset(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            sock.close()

    def _close(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()

    def kill(self) -> None:
        """Cut every open connection (reset) and refuse new ones until `revive`."""
        self.refusing = True
        with self._lock:
            current = list(self._open)
        for sock in current:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            self._reset(sock)
        self.flowing.set()

    def revive(self) -> None:
        self.refusing = False


class TranscriptFolder:
    """The run's transcript storage: a small tmpfs, filled up (full: ENOSPC) or remounted
    read-only (unwritable: EROFS); where mounting is not possible, a folder whose directories are
    made read-only (immutable for root) stands in for both."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.mounted = (
            os.geteuid() == 0
            and subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", str(path)],
                capture_output=True,
            ).returncode
            == 0
        )
        self.filler = path / "filler.bin"
        self.locked = False  # its folders made read-only (no tmpfs, or the remount failed)

    def fill(self) -> str:
        """Storage full: the tmpfs filled to its last byte."""
        if not self.mounted:
            return self._folders_read_only()
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 20, 4096, 1):  # down to the last free byte
                with contextlib.suppress(OSError):
                    while os.write(fd, b"\0" * size):
                        pass
        finally:
            os.close(fd)
        return "tmpfs filled up (ENOSPC)"

    def make_unwritable(self) -> str:
        """Storage unwritable: the tmpfs remounted read-only, as a disk the kernel remounts after
        an I/O error."""
        if not self.mounted:
            return self._folders_read_only()
        deadline = time.monotonic() + 5
        while True:  # a file open for writing at that instant makes the remount fail (EBUSY)
            done = self._remount("ro")
            if done.returncode == 0:
                return "tmpfs remounted read-only (EROFS)"
            if time.monotonic() > deadline:
                return self._folders_read_only() + f" (remount failed: {done.stderr.strip()})"
            time.sleep(0.05)

    def mend(self) -> None:
        """Writable again, whichever way it was broken."""
        if self.mounted:
            self._remount("rw")
            self.filler.unlink(missing_ok=True)
        if self.locked:
            for folder in self._folders():
                if os.geteuid() == 0:
                    subprocess.run(["chattr", "-i", str(folder)], check=True)
                else:
                    folder.chmod(0o755)
            self.locked = False

    def _remount(self, mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mount", "-o", f"remount,{mode}", str(self.path)], capture_output=True, text=True
        )

    def _folders_read_only(self) -> str:
        self.locked = True
        for folder in self._folders():
            if os.geteuid() == 0:
                subprocess.run(["chattr", "+i", str(folder)], check=True)
            else:
                folder.chmod(0o555)
        return "folders read-only"

    def _folders(self) -> list[Path]:
        return [self.path, *(p for p in self.path.rglob("*") if p.is_dir())]

    def remove(self) -> None:
        self.mend()
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)
        shutil.rmtree(self.path, ignore_errors=True)


# --- the service ---------------------------------------------------------------------------
@dataclass
class Service:
    env: dict[str, str]
    logs: Path
    port: int
    web: subprocess.Popen | None = None
    worker: subprocess.Popen | None = None
    beat: subprocess.Popen | None = None

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        # A session of its own, so a SIGKILL reaches the process and its children only.
        return subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL,
            stderr=(self.logs / f"{name}.log").open("a"), start_new_session=True,
        )  # fmt: skip

    def start(self, web_workers: int) -> None:
        self.web = self._spawn(
            "web",
            [str(VENV / "gunicorn"), "--config", "gunicorn.conf.py", "memoryproject.wsgi",
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(web_workers),
             "--log-level", "warning"],
        )  # fmt: skip
        self.start_worker()
        self.beat = self._spawn(
            "beat",
            [str(VENV / "celery"), "-A", "memoryproject", "beat", "--loglevel", "WARNING",
             "--schedule", str(self.logs / "celerybeat-schedule")],
        )  # fmt: skip

    def start_worker(self) -> None:
        self.worker = self._spawn(
            "worker",
            [str(VENV / "celery"), "-A", "memoryproject", "worker", "--concurrency", "1",
             "--loglevel", "WARNING"],
        )  # fmt: skip

    def restart_dead_worker(self) -> int | None:
        """Start the worker again if it exited; its exit code, or None while it runs."""
        assert self.worker
        code = self.worker.poll()
        if code is not None:
            self.start_worker()
        return code

    def kill_worker(self) -> None:
        assert self.worker
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(10)

    def kill_web_worker(self) -> int:
        """SIGKILL one of gunicorn's worker processes (its master starts another); its pid."""
        assert self.web
        children = Path(f"/proc/{self.web.pid}/task/{self.web.pid}/children").read_text().split()
        victim = int(children[0])
        os.kill(victim, signal.SIGKILL)
        return victim

    def stop(self) -> None:
        stop([p for p in (self.web, self.worker, self.beat) if p is not None])


# --- HTTP ----------------------------------------------------------------------------------
@dataclass
class Answer:
    op: str
    started: float
    seconds: float
    status: int  # 0: no answer (connection cut, timed out)
    data: Any = None
    inside: float | None = None  # a recall's own time (Server-Timing `total`), without queueing


class Client:
    """One keep-alive connection; no retries, so each request counts once."""

    def __init__(self, port: int, secret: str, timeout: float = 30) -> None:
        self.port, self.timeout = port, timeout
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.conn: http.client.HTTPConnection | None = None

    def call(self, op: str, method: str, path: str, body: Any = None) -> Answer:
        started = time.monotonic()
        payload = json.dumps(body) if body is not None else None
        inside = None
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.request(method, path, body=payload, headers=self.headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
            for part in (response.getheader("Server-Timing") or "").split(","):
                if part.strip().startswith("total;dur="):
                    inside = float(part.split("=", 1)[1]) / 1000
            try:
                data = json.loads(raw) if raw else None
            except ValueError:
                data = None
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            status, data = 0, None
        return Answer(op, started, time.monotonic() - started, status, data, inside)


# --- load and what it wrote ------------------------------------------------------------------
@dataclass
class Acknowledged:
    """Every write the service acknowledged, by kind; each with the time it was answered."""

    events: dict[str, set[str]] = field(default_factory=dict)  # session -> event ids
    items: dict[str, float] = field(default_factory=dict)
    cards: dict[str, float] = field(default_factory=dict)
    recalls: dict[str, tuple[str, float]] = field(default_factory=dict)  # id -> (session, at)
    event_times: dict[str, float] = field(default_factory=dict)
    tenant_slug: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def total(self) -> int:
        return len(self.event_times) + len(self.items) + len(self.cards) + len(self.recalls)


class Load:
    """Client threads cycling through append, proposal, recall and card import."""

    def __init__(self, port: int, secret: str, threads: int, tenant_slug: str) -> None:
        self.port, self.secret, self.threads = port, secret, threads
        self.slug = tenant_slug
        self.answers: list[Answer] = []
        self.acked = Acknowledged(tenant_slug=tenant_slug)
        self.running = threading.Event()
        self.active = threading.Event()  # cleared: the threads wait (while writes are checked)
        self._workers: list[threading.Thread] = []

    def start(self) -> None:
        self.running.set()
        self.active.set()
        for n in range(self.threads):
            thread = threading.Thread(target=self._loop, args=(n,), daemon=True)
            thread.start()
            self._workers.append(thread)

    def pause(self) -> None:
        self.active.clear()
        time.sleep(1)

    def resume(self) -> None:
        self.active.set()

    def stop(self) -> None:
        self.running.clear()
        self.active.set()
        for thread in self._workers:
            thread.join(60)

    def _loop(self, n: int) -> None:
        client = Client(self.port, self.secret)
        user, session = f"u_{n}", f"s_{n}"
        step = 0
        session_known = False
        while self.running.is_set():
            self.active.wait()
            step += 1
            kind = ("append", "proposal", "append", "recall", "card")[step % 5]
            if kind == "recall" and not session_known:
                kind = "append"
            tag = f"{n}-{step}-{uuid.uuid4().hex[:6]}"
            if kind == "append":
                ids = [f"e-{tag}-a", f"e-{tag}-b"]
                answer = client.call(
                    kind, "POST", f"/v1/sessions/{session}/events",
                    {"user_id": user, "task_id": "deploy", "events": [
                        {"id": ids[0], "role": "user",
                         "content": f"We deploy service {tag} with Terraform to prod-k8s."},
                        {"id": ids[1], "role": "assistant", "content": f"Noted for {tag}."},
                    ]},
                )  # fmt: skip
                if answer.status in (200, 201):
                    session_known = True
                    with self.acked.lock:
                        self.acked.events.setdefault(session, set()).update(ids)
                        for event_id in ids:
                            self.acked.event_times[event_id] = answer.started + answer.seconds
            elif kind == "proposal":
                answer = client.call(
                    kind, "POST", "/v1/memories/proposals",
                    {"proposals": [{
                        "user_id": user, "session_id": session, "memory_type": "fact",
                        "summary": f"Service {tag} listens on port {1000 + step % 9000}.",
                        "source": {"kind": "user", "message_ids": [f"m-{tag}"]},
                        "confidence": 0.9, "importance": 0.7,
                    }]},
                )  # fmt: skip
                if answer.status in (200, 201):
                    with self.acked.lock:
                        for result in answer.data.get("results", []):
                            if result.get("item_id"):
                                self.acked.items[result["item_id"]] = answer.started
            elif kind == "card":
                answer = client.call(
                    kind, "POST", "/v1/ltm/cards:import",
                    {"cards": [{
                        "id": f"c-{tag}", "user_id": user, "memory_type": "procedure",
                        "title": f"Runbook {tag}",
                        "summary": f"Restart service {tag} with kubectl rollout restart.",
                    }]},
                )  # fmt: skip
                if answer.status in (200, 201):
                    with self.acked.lock:
                        for card in answer.data.get("cards", []):
                            if card.get("memory_id"):
                                self.acked.cards[card["memory_id"]] = answer.started
            else:
                answer = client.call(
                    kind, "POST", "/v1/recall",
                    {"user_id": user, "session_id": session, "task_id": "deploy",
                     "query": "How do we deploy to prod-k8s?"},
                )  # fmt: skip
                if answer.status == 200 and answer.data.get("recall_id"):
                    with self.acked.lock:
                        self.acked.recalls[answer.data["recall_id"]] = (session, answer.started)
            with self.acked.lock:
                self.answers.append(answer)
            time.sleep(0.2)


class Readiness:
    """Polls /readyz every half second: (time, status, failing)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.samples: list[tuple[float, int, list[str]]] = []
        self.running = threading.Event()
        self.running.set()
        threading.Thread(target=self._poll, daemon=True).start()

    def _poll(self) -> None:
        while self.running.is_set():
            started = time.monotonic()
            failing: list[str] = []
            try:
                conn = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=READYZ_CLIENT_TIMEOUT_S
                )
                conn.request("GET", "/readyz")
                response = conn.getresponse()
                status = response.status
                with contextlib.suppress(ValueError):
                    failing = json.loads(response.read()).get("failing", [])
                conn.close()
            except (OSError, http.client.HTTPException):
                status = 0
            self.samples.append((started, status, failing))
            time.sleep(max(0.0, 0.5 - (time.monotonic() - started)))

    def first_red(self, after: float) -> tuple[float, list[str]] | None:
        for at, status, failing in self.samples:
            if at >= after and status != 200:
                return at - after, failing
        return None

    def failing(self, start: float, end: float) -> list[str]:
        """Every check /readyz named failing between `start` and `end`; "(no answer)" for a poll
        that timed out."""
        names: set[str] = set()
        for at, status, failing in self.samples:
            if start <= at <= end and status != 200:
                names.update(failing or (["(no answer)"] if status == 0 else []))
        return sorted(names)

    def green_at(self, after: float) -> float | None:
        for at, status, _ in self.samples:
            if at >= after and status == 200:
                return at
        return None

    def wait_green(self, after: float, limit: float) -> float | None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            found = self.green_at(after)
            if found is not None:
                return found - after
            time.sleep(0.25)
        return None


# --- checking what was acknowledged --------------------------------------------------------
def missing_writes(client: Client, acked: Acknowledged) -> dict[str, set[str]]:
    """The acknowledged writes the service cannot show now, by kind."""
    with acked.lock:
        sessions = {s: set(ids) for s, ids in acked.events.items()}
        items, cards = set(acked.items), set(acked.cards)
        recalls = dict(acked.recalls)
    stored: dict[str, set[str]] = {}
    missing: dict[str, set[str]] = {
        "events": set(),
        "items": set(),
        "cards": set(),
        "recalls": set(),
        "history": set(),
    }
    seqs: dict[str, dict[str, int]] = {}  # session -> event id -> seq
    for session in {*sessions, *(s for s, _ in recalls.values())}:
        ids: set[str] = set()
        seqs[session] = {}
        after = 0
        while True:
            answer = client.call(
                "check", "GET", f"/v1/sessions/{session}/events?after={after}&limit=1000"
            )
            if answer.status != 200:
                raise RuntimeError(f"replaying {session} answered {answer.status}")
            ids |= {e["id"] for e in answer.data["events"]}
            seqs[session].update({e["id"]: int(e["seq"]) for e in answer.data["events"]})
            if not answer.data["has_more"]:
                break
            after = answer.data["next_after"]
        stored[session] = ids
    for session, ids in sessions.items():
        missing["events"] |= ids - stored[session]
        kept = ids & stored[session]  # an event lost is counted once, among the events
        missing["history"] |= missing_history(acked.tenant_slug, session, kept, seqs[session])
    for recall_id, (session, _) in recalls.items():
        if recall_id not in stored[session]:
            missing["recalls"].add(recall_id)
    for item_id in items:
        answer = client.call("check", "GET", f"/v1/memories/{item_id}")
        if answer.status == 404:
            missing["items"].add(item_id)
        elif answer.status != 200:
            raise RuntimeError(f"reading {item_id} answered {answer.status}")
    for card_id in cards:
        answer = client.call("check", "GET", f"/v1/ltm/cards/{card_id}")
        if answer.status == 404:
            missing["cards"].add(card_id)
        elif answer.status != 200:
            raise RuntimeError(f"reading {card_id} answered {answer.status}")
    return missing


def missing_history(
    tenant_slug: str, session: str, event_ids: set[str], seqs: dict[str, int]
) -> set[str]:
    """The events among `event_ids` (each a user or assistant turn) whose history entry is not
    in both the history index and the history collection; read from the stores directly."""
    from memories.history.documents import entry_id_for
    from memories.history.search import history_search_index
    from memories.history.vectors import history_vector_index
    from transcripts.models import Session

    found = Session.objects.filter(tenant__slug=tenant_slug, external_id=session).first()
    if found is None:
        return set(event_ids)
    tenant_id = str(found.tenant_id)
    try:
        held = set(history_search_index().session_ids(tenant_id=tenant_id, session_pk=found.pk))
        held &= set(history_vector_index().session_ids(tenant_id=tenant_id, session_pk=found.pk))
    except Exception as exc:  # noqa: BLE001 - the suite's own reads of the shared stores
        raise RuntimeError(f"reading the history of {session}: {exc}") from exc
    return {
        event_id
        for event_id in event_ids
        if event_id not in seqs or entry_id_for(session_pk=found.pk, seq=seqs[event_id]) not in held
    }


def settle(client: Client, acked: Acknowledged, limit: float) -> tuple[dict[str, set[str]], float]:
    """Check until nothing acknowledged is missing or `limit` seconds passed (recall records
    are applied a moment after the recall, or by the next beat run after an outage)."""
    started = time.monotonic()
    while True:
        try:
            missing = missing_writes(client, acked)
        except RuntimeError as exc:
            missing = {"unreadable": {str(exc)}}
        if not any(missing.values()) or time.monotonic() - started > limit:
            return missing, time.monotonic() - started
        time.sleep(2)


# --- one fault -----------------------------------------------------------------------------
@dataclass
class Outcome:
    name: str
    started: float
    lifted: float
    note: str = ""
    statuses: Counter = field(default_factory=Counter)
    longest: float = 0.0
    longest_op: str = ""
    longest_inside: float | None = None
    red: tuple[float, list[str]] | None = None
    recovery: float | None = None
    worker_lag: float | None = None
    checked_in: float = 0.0
    acked_during: int = 0
    late: dict[str, set[str]] = field(default_factory=dict)  # missing at this fault's check
    lost: dict[str, set[str]] = field(default_factory=dict)  # of those, still missing at the end


@dataclass
class Stores:
    """What the faults break: the run's Redis server, the proxies in front of the shared stores
    (by name: pg, es, milvus), the service's worker and web workers, transcript storage."""

    redis: RedisServer
    proxies: dict[str, StoreProxy]
    service: Service
    storage: TranscriptFolder

    def inject(self, fault: str) -> str:
        """Break what `fault` names; a note for the table."""
        store, _, how = fault.partition("-")
        if store in self.proxies:
            proxy = self.proxies[store]
            proxy.freeze() if how == "frozen" else proxy.kill()
        elif fault == "redis-killed":
            self.redis.kill()
        elif fault == "redis-frozen":
            self.redis.freeze()
        elif fault == "worker-killed":
            self.service.kill_worker()
        elif fault == "web-worker-killed":
            return f"killed gunicorn worker {self.service.kill_web_worker()}"
        elif fault == "storage-full":
            return self.storage.fill()
        elif fault == "storage-unwritable":
            return self.storage.make_unwritable()
        return ""

    def lift(self, fault: str) -> None:
        store, _, how = fault.partition("-")
        if store in self.proxies:
            proxy = self.proxies[store]
            proxy.thaw() if how == "frozen" else proxy.revive()
        elif fault == "redis-killed":
            self.redis.start()  # the same port and append-only file
        elif fault == "redis-frozen":
            self.redis.thaw()
        elif fault == "worker-killed":
            self.service.start_worker()
        elif fault in ("storage-full", "storage-unwritable"):
            self.storage.mend()

    def mend_all(self) -> None:
        """Nothing stays broken: the proxies forward, Redis runs, storage takes writes."""
        for proxy in self.proxies.values():
            proxy.revive()
            proxy.thaw()
        with contextlib.suppress(Exception):
            self.redis.thaw()
        with contextlib.suppress(Exception):
            self.storage.mend()


def run_fault(
    name: str, seconds: float, settle_limit: float, load: Load, readiness: Readiness,
    checker: Client, stores: Stores,
) -> Outcome:  # fmt: skip
    log(f"{name}: {seconds:.0f} s")
    acked_before = load.acked.total()
    load.resume()
    time.sleep(2)  # writes in flight when the fault comes
    started = time.monotonic()
    note = stores.inject(name)
    time.sleep(seconds)
    lifted = time.monotonic()
    stores.lift(name)
    # A worker that exited by itself (not this fault's doing) is started again, as a process
    # supervisor would; the table says so.
    died = stores.service.restart_dead_worker()
    if died is not None:
        note = "; ".join(filter(None, (note, f"the worker exited ({died}) and was started again")))
    outcome = Outcome(name, started, lifted, note)
    outcome.recovery = readiness.wait_green(lifted, limit=settle_limit)
    time.sleep(2)  # writes as the service comes back
    load.pause()
    worker_started = time.monotonic()
    outcome.worker_lag = wait_for_worker(limit=settle_limit)
    if outcome.worker_lag is not None:
        outcome.worker_lag += worker_started - lifted
    # Requests under way at some moment of the fault: started during it, or before it and
    # answered after it began.
    during = [
        a for a in list(load.answers) if a.started < lifted and a.started + a.seconds > started
    ]
    outcome.statuses = Counter(
        "2xx" if 200 <= a.status < 300 else "503" if a.status == 503 else "other" for a in during
    )
    slowest = max(during, key=lambda a: a.seconds, default=None)
    if slowest is not None:
        outcome.longest, outcome.longest_op = slowest.seconds, slowest.op
        outcome.longest_inside = slowest.inside
    outcome.red = readiness.first_red(started)
    if outcome.red is not None and outcome.red[0] > lifted - started + 1:
        outcome.red = None  # red only after the fault was lifted: not this fault's
    if outcome.red is not None:
        outcome.red = (outcome.red[0], readiness.failing(started, lifted + 1))
    outcome.acked_during = load.acked.total() - acked_before
    outcome.late, outcome.checked_in = settle(checker, load.acked, settle_limit)
    log(
        f"{name}: lifted; ready again after {fmt(outcome.recovery)}, "
        f"{sum(len(v) for v in outcome.late.values())} acknowledged writes not found yet"
    )
    return outcome


def wait_for_worker(limit: float) -> float | None:
    """Seconds until the worker has been idle for three checks in a row; None past `limit`."""
    started = time.monotonic()
    calm = 0
    while time.monotonic() - started < limit:
        try:
            calm = calm + 1 if worker_idle(SERVICE) else 0
        except Exception:  # noqa: BLE001 - a store still coming back: check again
            calm = 0
        if calm >= 3:
            return time.monotonic() - started
        time.sleep(1)
    return None


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def report(outcomes: list[Outcome], skipped: list[str]) -> int:
    print()
    header = (
        f"{'fault':<18} {'2xx':>5} {'503':>5} {'other':>5}  {'longest':>8} {'bound':>6}  "
        f"{'readyz red':>10}  {'recovery':>8}  {'worker':>8}  {'acked':>5}  "
        f"{'late':>4}  {'lost':>4}"
    )
    print(header)
    print("-" * len(header))
    lost_total = 0
    for o in outcomes:
        bound = BOUNDS[o.name]
        over = " !" if o.longest > bound else ""
        lost = sum(len(v) for v in o.lost.values())
        late = sum(len(v) for v in o.late.values())
        lost_total += lost
        red = "-" if o.red is None else f"{o.red[0]:.1f} s"
        print(
            f"{o.name:<18} {o.statuses['2xx']:>5} {o.statuses['503']:>5} {o.statuses['other']:>5}"
            f"  {o.longest:>6.1f} s {bound:>4.1f} s{over:<2}{red:>10}  {fmt(o.recovery):>8}  "
            f"{fmt(o.worker_lag):>8}  {o.acked_during:>5}  {late:>4}  {lost:>4}"
        )
    print()
    for o in outcomes:
        details = []
        if o.note:
            details.append(o.note)
        if o.longest_op:
            inside = "" if o.longest_inside is None else f" ({o.longest_inside:.1f} s in recall)"
            details.append(f"longest: {o.longest_op}{inside}")
        if o.red is not None:
            details.append(f"readyz failing {','.join(o.red[1]) or '(no answer)'}")
        details.append(f"writes checked in {o.checked_in:.0f} s")
        for kind, ids in o.late.items():
            if ids:
                details.append(f"not found yet {kind}: {len(ids)}")
        for kind, ids in o.lost.items():
            if ids:
                details.append(f"lost {kind}: {', '.join(sorted(ids)[:5])}")
        print(f"{o.name}: " + "; ".join(details))
    for name in skipped:
        print(f"{name}: skipped, the budget was spent")
    print(
        "\nlongest: the slowest request under way during the fault (client side, with queueing);"
        "\nbound: the timeout it meets + 1 s; recovery: until /readyz answered 200 after the fault"
        "\nwas lifted; worker: until the worker was idle (-: not within the wait); acked: writes"
        "\nacknowledged meanwhile; late: acknowledged writes not found at the fault's check;"
        "\nlost: of those, still not found at the end of the run."
    )
    return 1 if lost_total else 0


# --- main ----------------------------------------------------------------------------------
def proxied(url: str, port: int) -> str:
    parts = urlsplit(url)
    auth = parts.netloc.rpartition("@")[0]
    netloc = f"{auth}@127.0.0.1:{port}" if auth else f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}, 5 s")
    parser.add_argument("--faults", default="", help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--fault-seconds", type=float, default=0, help="each fault's length")
    parser.add_argument("--budget", type=float, default=0, help="seconds for the whole run")
    parser.add_argument("--threads", type=int, default=4, help="client threads")
    parser.add_argument(
        "--web-workers", type=int, default=0, help="gunicorn workers (default: threads + 1)"
    )
    parser.add_argument("--settle", type=float, default=0, help="most seconds to wait per fault")
    args = parser.parse_args()
    began = time.monotonic()
    faults = [f for f in args.faults.split(",") if f] or list(QUICK if args.quick else FAULTS)
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        parser.error(f"unknown faults: {', '.join(unknown)}")
    seconds = args.fault_seconds or (5.0 if args.quick else 10.0)
    settle_limit = args.settle or 30.0
    # Enough for every fault chosen to wait out its settling twice (the worker, the writes).
    budget = args.budget or (
        240.0 if args.quick else 120 + len(faults) * (seconds + 2 * settle_limit + 15)
    )

    work = Path(tempfile.mkdtemp(prefix=f"faults-{RUN}-"))
    redis = RedisServer(work)
    storage = TranscriptFolder(work / "transcripts")
    # The shared stores: this process talks to them directly (its checks must not meet the
    # faults); the service goes through a proxy in front of each.
    upstreams = {
        "pg": ("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test", 5432),
        "es": ("ELASTICSEARCH_URL", "http://127.0.0.1:9200", 9200),
        "milvus": ("MILVUS_URI", "http://127.0.0.1:19530", 19530),
    }
    direct = {store: os.environ.get(var) or url for store, (var, url, _) in upstreams.items()}
    proxies = {
        store: StoreProxy(
            store,
            (urlsplit(direct[store]).hostname or "127.0.0.1", urlsplit(direct[store]).port or port),
        )
        for store, (_, _, port) in upstreams.items()
    }
    redis.start()
    env = {
        **SERVICE.env(),
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis.port}/1",
        "TRANSCRIPT_STORAGE": str(storage.path),
        "DATABASE_STATEMENT_TIMEOUT_MS": str(PG_STATEMENT_MS),
        "DATABASE_READ_TIMEOUT_MS": str(PG_READ_MS),
        "DATABASE_CONNECT_TIMEOUT": str(PG_CONNECT_S),
        "DATABASE_FAIL_FAST_MS": str(PG_FAIL_FAST_MS),
        "ELASTICSEARCH_TIMEOUT_MS": str(ES_TIMEOUT_MS),
        "MILVUS_TIMEOUT_MS": str(MILVUS_TIMEOUT_MS),
        "RECALL_LTM_TIMEOUT_MS": str(RECALL_LTM_TIMEOUT_MS),
        "HEARTBEAT_SECONDS": str(HEARTBEAT_S),
        "WORKER_STALL_RESTART_SECONDS": str(WORKER_STALL_RESTART_S),
        "READYZ_STORAGE_PROBE_SECONDS": "1",
        "READYZ_REQUIRE_WORKERS": "1",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "API_RATE_LIMIT_PER_MINUTE": "100000",
        "LOG_LEVEL": "WARNING",
    }
    django_setup(
        migrate=True,
        **env,
        DATABASE_URL=direct["pg"],
        ELASTICSEARCH_URL=direct["es"],
        MILVUS_URI=direct["milvus"],
    )
    from memories.services import stores_ensure
    from profiles.services.api_keys import api_key_create
    from profiles.services.tenants import tenant_create

    stores_ensure()
    tenant = tenant_create(slug=f"{SERVICE.prefix}-t", name="Fault suite")
    _, secret = api_key_create(
        tenant=tenant, name="faults", scopes=["read", "write", "admin"], trusted_writer=True
    )
    port = free_port()
    service = Service(
        env={
            **os.environ,
            **env,
            **{
                upstreams[store][0]: proxied(direct[store], proxy.port)
                for store, proxy in proxies.items()
            },
        },
        logs=work,
        port=port,
    )
    outcomes: list[Outcome] = []
    skipped: list[str] = []
    load: Load | None = None
    readiness: Readiness | None = None
    status = 1
    try:
        # A worker for each client thread and the /readyz poller: a request waits for the
        # store it meets, not for a worker another client's request holds meanwhile.
        service.start(args.web_workers or args.threads + 1)
        ports = ", ".join(f"{name} {proxy.port}" for name, proxy in proxies.items())
        kind = "tmpfs" if storage.mounted else "folder"
        log(f"run {RUN}: service on {port}, Redis {redis.port}, proxies {ports}, "
            f"storage {kind} at {storage.path}")  # fmt: skip
        readiness = Readiness(port)
        if readiness.wait_green(time.monotonic() - 1, limit=120) is None:
            raise SystemExit(f"/readyz did not turn green; see {work}/web.log")
        load = Load(port, secret, args.threads, tenant.slug)
        load.start()
        time.sleep(3)  # some writes before the first fault
        load.pause()
        checker = Client(port, secret, timeout=30)
        stores = Stores(redis, proxies, service, storage)
        for name in faults:
            left = budget - (time.monotonic() - began)
            if left < seconds + 20:
                skipped.append(name)
                continue
            outcomes.append(
                run_fault(
                    name,
                    seconds,
                    min(settle_limit, left - seconds - 10),
                    load,
                    readiness,
                    checker,
                    stores,
                )  # fmt: skip
            )
        load.stop()
        wait_for_worker(limit=settle_limit)
        final, _ = settle(checker, load.acked, settle_limit)
        # A write still missing at the end is lost: it counts against the first fault whose
        # check missed it (or the last fault, when every check found it).
        unclaimed = {kind: set(ids) for kind, ids in final.items()}
        for outcome in outcomes:
            for kind, ids in outcome.late.items():
                outcome.lost[kind] = ids & unclaimed.get(kind, set())
                unclaimed.get(kind, set()).difference_update(ids)
        if outcomes:
            for kind, ids in unclaimed.items():
                outcomes[-1].lost.setdefault(kind, set()).update(ids)
        status = report(outcomes, skipped)
        counts = Counter(a.op for a in load.answers)
        print(
            f"\n{load.acked.total()} acknowledged writes checked "
            f"({len(load.acked.event_times)} events, {len(load.acked.items)} items, "
            f"{len(load.acked.cards)} cards, {len(load.acked.recalls)} recall records; and "
            f"the {len(load.acked.event_times)} events' history entries); "
            f"requests: {dict(counts)}; run took {time.monotonic() - began:.0f} s"
        )
    finally:
        if load is not None:
            load.stop()
        if readiness is not None:
            readiness.running.clear()
        Stores(redis, proxies, service, storage).mend_all()
        service.stop()
        cleanup(tenant, redis, storage, work, failed=status != 0)
    return status


def cleanup(tenant: Any, redis: RedisServer, storage: TranscriptFolder, work: Path,
            failed: bool) -> None:  # fmt: skip
    from memories.history.search import history_search_index
    from memories.history.vectors import history_vector_index
    from memories.ltm.search import card_search_index
    from memories.ltm.vectors import vector_index
    from profiles.services.tenants import tenant_delete

    if redis.process is None or redis.process.poll() is not None:
        redis.start()
    for index in (card_search_index(), vector_index(), history_search_index(),
                  history_vector_index()):  # fmt: skip
        with contextlib.suppress(Exception):
            index.drop()
    with contextlib.suppress(Exception):
        tenant_delete(tenant=tenant)
    redis.kill()  # this run's own server, with everything it held
    storage.remove()
    if failed:
        print(f"logs kept in {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
