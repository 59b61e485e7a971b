"""Django's PostgreSQL backend, whose connections give up on a server that stops answering.

libpq bounds the connect (connect_timeout) and the kernel a dead link (keepalives,
tcp_user_timeout), but a server that is frozen, or a proxy that stops forwarding, still
acknowledges every packet: a query sent to it waits forever. Each connection here waits at
most OPTIONS["read_timeout"] seconds (DATABASE_READ_TIMEOUT_MS) for any answer (a query, a
fetch, a commit, the health check of a reused connection), then closes itself and raises
OperationalError, which the API answers 503 `store_unavailable`. The server's own
statement_timeout lies below it, so a merely slow query is cancelled cleanly by the server
first. Migrations run without either bound.

After a read or connect timeout the process counts the server as failed for
DATABASE_FAIL_FAST_MS: connections to it are refused at once and reused ones fail their health
check without asking, so a request that meets a frozen server waits one timeout, not a read
timeout for its reused connection and then a connect timeout for the new one Django opens.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from django.db.models.signals import pre_migrate
from psycopg import errors

from memoryproject.fail_fast import FailFastWindow

_WAIT_INTERVAL = 0.1  # psycopg's own: how often a wait wakes to let Ctrl-C through

Server = tuple[str, str]  # (host, port) as the connection parameters name them
_window = FailFastWindow(lambda: settings.DATABASE_FAIL_FAST_SECONDS)
_failed_until = _window.until  # the servers refused for now, and until when


def server_failed_recently(server: Server) -> bool:
    """True while connections to this server are refused at once (it timed out moments ago)."""
    return _window.failed_recently(server)


def server_failed(server: Server) -> None:
    """A call to this server timed out: refuse connections to it for DATABASE_FAIL_FAST_MS."""
    _window.failed(server)


def _server_of(params: dict[str, Any]) -> Server:
    return str(params.get("host") or ""), str(params.get("port") or "")


class BoundedConnection(psycopg.Connection):  # type: ignore[type-arg]
    """A psycopg connection that waits at most `read_timeout` seconds for the server."""

    read_timeout: float | None = None
    server: Server = ("", "")

    def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        bound = timeout or self.read_timeout
        try:
            return super().wait(gen, interval=interval, timeout=bound)
        except errors._WaitTimeout:
            # The connection is mid-protocol and of no further use: drop it, and spare the
            # process's next connect a second wait on the same server.
            self.pgconn.finish()
            server_failed(self.server)
            raise psycopg.OperationalError(
                f"PostgreSQL did not answer within {bound:g}s; connection closed"
            ) from None


class DatabaseWrapper(base.DatabaseWrapper):
    """The postgresql backend; OPTIONS["read_timeout"] (seconds, 0 for none) bounds each wait."""

    def get_connection_params(self) -> dict[str, Any]:
        params = dict(super().get_connection_params())
        self.read_timeout = float(params.pop("read_timeout", 0) or 0) or None
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        server = _server_of(conn_params)
        if server_failed_recently(server):
            raise psycopg.OperationalError(
                f"PostgreSQL {':'.join(server)} did not answer moments ago; not waiting on it"
            )
        try:
            connection = super().get_new_connection(conn_params)
        except errors.ConnectionTimeout:
            server_failed(server)
            raise
        if isinstance(connection, psycopg.Connection) and not self.pool:
            # psycopg.connect() builds a plain Connection; this only adds the bounded wait.
            connection.__class__ = BoundedConnection
            assert isinstance(connection, BoundedConnection)
            connection.read_timeout = self.read_timeout
            connection.server = server
        return connection

    def is_usable(self) -> bool:
        server = getattr(self.connection, "server", None)
        if server is not None and server_failed_recently(server):
            return False  # its server timed out moments ago: do not wait on it again
        return bool(super().is_usable())

    def unbounded(self) -> None:
        """Lift the read timeout and the statement timeout for this connection's session
        (migrations: a schema change on a large table may rightly take minutes)."""
        self.ensure_connection()
        self.read_timeout = None
        if isinstance(self.connection, BoundedConnection):
            self.connection.read_timeout = None
        with self.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")


def _migrations_unbounded(using: str = "default", **_: Any) -> None:
    from django.db import connections

    connection = connections[using]
    if isinstance(connection, DatabaseWrapper):
        connection.unbounded()


pre_migrate.connect(_migrations_unbounded, dispatch_uid="memoryproject.postgres.unbounded")
