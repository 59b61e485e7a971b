"""Django's PostgreSQL backend, whose connections give up on a server that stops answering.

libpq bounds the connect (connect_timeout) and the kernel a dead link (keepalives,
tcp_user_timeout), but a server that is frozen, or a proxy that stops forwarding, still
acknowledges every packet: a query sent to it waits forever. Each connection here waits at
most OPTIONS["read_timeout"] seconds (DATABASE_READ_TIMEOUT_MS) for any answer (a query, a
fetch, a commit), then closes itself and raises OperationalError, which the API answers 503
`store_unavailable`. The server's own statement_timeout lies below it, so a merely slow query
is cancelled cleanly by the server first. Migrations run without either bound.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db.backends.postgresql import base
from django.db.models.signals import pre_migrate
from psycopg import errors

_WAIT_INTERVAL = 0.1  # psycopg's own: how often a wait wakes to let Ctrl-C through


class BoundedConnection(psycopg.Connection):  # type: ignore[type-arg]
    """A psycopg connection that waits at most `read_timeout` seconds for the server."""

    read_timeout: float | None = None

    def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        bound = timeout or self.read_timeout
        try:
            return super().wait(gen, interval=interval, timeout=bound)
        except errors._WaitTimeout:
            # The connection is mid-protocol and of no further use: drop it (the next request
            # connects afresh, or fails after connect_timeout while the server is still away).
            self.pgconn.finish()
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
        connection = super().get_new_connection(conn_params)
        if isinstance(connection, psycopg.Connection) and not self.pool:
            # psycopg.connect() builds a plain Connection; this only adds the bounded wait.
            connection.__class__ = BoundedConnection
            assert isinstance(connection, BoundedConnection)
            connection.read_timeout = self.read_timeout
        return connection

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
