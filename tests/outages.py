"""Stores that a test can break: a Redis server of its own and a TCP proxy in front of PostgreSQL.

Both are stopped by the test that started them (by PID, or by closing the proxy's sockets);
the machine's shared stores are never touched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, *, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class RedisServer:
    """A throwaway `redis-server` (no persistence) that can be killed, frozen and restarted."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def kill(self) -> None:
        """The server is gone: connections are refused."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)  # a frozen server must be able to die
            self.process.kill()
            self.process.wait(10)

    def freeze(self) -> None:
        """The server hangs: connections open, nothing answers (as behind a dead link)."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)


class TcpProxy:
    """Forwards a local port to a target, until switched to refuse or blackhole connections.

    `refuse`: open connections are cut and new ones closed at once (the server went away).
    `blackhole`: connections are accepted and bytes swallowed, nothing ever answers.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.mode = "pass"
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="pg-proxy", daemon=True)
        self._thread.start()

    def switch(self, mode: str) -> None:
        assert mode in ("pass", "refuse", "blackhole")
        self.mode = mode
        if mode == "refuse":
            self._cut_all()

    def close(self) -> None:
        self._closed = True
        self._thread.join(5)
        self._listener.close()
        self._cut_all()

    def _cut_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _keep(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.extend(sockets)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.mode == "refuse":
                client.close()
                continue
            if self.mode == "blackhole":
                self._keep(client)
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._keep(client, upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _swallow(self, sock: socket.socket) -> None:
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if self.mode == "blackhole":
                    continue  # swallowed: the other side waits for an answer that never comes
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
