"""History entries in PostgreSQL's full-text index: the lexical engine of one machine.

The same interface as the Elasticsearch index (`search.HistorySearchIndex`). An entry's BM25
terms (segmented Chinese, stemmed English, as `bm25_text` makes them) are stored as they are,
as a `tsvector` of whole terms (no parser of PostgreSQL's touches them). A search reads only the
rows of one end user (the owner index) and ranks those holding a query term by BM25 in one
query, as Elasticsearch does (k1 1.2, b 0.75, each field on its own, the context at its weight),
with the document frequencies and lengths of that user's rows; so its time grows with what one
user said, not with the table. No outbox lag: a write is searchable when its transaction
commits, and an erasure removes the rows in the same transaction as the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import DatabaseError, connection, transaction

from memories.history.documents import (
    STORED_FIELDS,
    HistoryDocument,
    HistoryMatch,
    HistoryScope,
)
from memories.history.models import HistoryLexicalEntry
from memoryproject.errors import StoreUnavailable

K1 = 1.2
B = 0.75
_TERMS = "array_to_tsvector(array_remove(string_to_array({}, ' '), ''))"
_OWN = ("text_length", "context_length")
_VALUES = ", ".join(["%s"] * (len(STORED_FIELDS) + len(_OWN)))
_UPSERT = f"""
INSERT INTO memories_historylexicalentry
    ({", ".join(STORED_FIELDS)}, {", ".join(_OWN)}, text_terms, context_terms)
VALUES ({_VALUES}, {_TERMS.format("%s")}, {_TERMS.format("%s")})
ON CONFLICT (entry_id) DO UPDATE SET
    {", ".join(f"{name} = EXCLUDED.{name}" for name in (*STORED_FIELDS[1:], *_OWN))},
    text_terms = EXCLUDED.text_terms, context_terms = EXCLUDED.context_terms
"""


class PostgresHistoryIndex:
    label = "PostgreSQL (history)"

    # --- lifecycle -----------------------------------------------------------------------------
    def ensure(self) -> list[str]:
        """The table and its indexes come with the migrations."""
        return []

    def ping(self) -> None:
        with self._errors(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    def drop(self) -> None:
        with self._errors():
            HistoryLexicalEntry.objects.all().delete()

    # --- writes --------------------------------------------------------------------------------
    def upsert(self, *, documents: Sequence[HistoryDocument]) -> None:
        """Write entries by entry_id (a replay overwrites the same entry with the same text)."""
        rows = [
            (
                *(doc.fields()[name] for name in STORED_FIELDS),
                len(doc.bm25_text.split()),
                len(doc.bm25_context.split()),
                doc.bm25_text,
                doc.bm25_context,
            )
            for doc in documents
        ]
        if not rows:
            return
        with self._errors(), transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(_UPSERT, rows)

    def remove_ids(self, *, ids: Sequence[str]) -> int:
        return self._delete(entry_id__in=list(ids)) if ids else 0

    def remove_user(self, *, tenant_id: str, user_id: str) -> int:
        return self._delete(tenant_id=tenant_id, user_id=user_id)

    def remove_tenant(self, *, tenant_id: str, keep_sessions: Sequence[int] | None = None) -> int:
        """Delete the tenant's entries (all, or those of sessions not in `keep_sessions`)."""
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id)
        if keep_sessions is not None:
            rows = rows.exclude(session_pk__in=list(keep_sessions))
        with self._errors():
            return rows.delete()[0]

    def _delete(self, **where: Any) -> int:
        with self._errors():
            return HistoryLexicalEntry.objects.filter(**where).delete()[0]

    # --- reads ---------------------------------------------------------------------------------
    def search(
        self,
        *,
        text: str,
        scope: HistoryScope,
        limit: int,
        context_weight: float = 0.6,
        timeout: float | None = None,
    ) -> list[HistoryMatch]:
        """BM25 over the entry's own terms, plus its context's terms at a lower weight."""
        terms = list(dict.fromkeys(text.split()))
        if not terms or scope.empty:
            return []
        where, params = _scope_sql(scope)
        sql, ranking = _ranking_sql(terms, where, context_weight)
        # Searches run on the branch threads, each keeping a connection of its own.
        kept = connection.connection is not None and not connection.in_atomic_block
        if kept and not connection.is_usable():
            connection.close()
        with self._errors(), transaction.atomic(), connection.cursor() as cursor:
            if timeout:
                cursor.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            cursor.execute(sql, [*params, *ranking, limit])
            best = cursor.fetchall()
            # the stored fields of the best only, by primary key
            cursor.execute(
                f"SELECT {', '.join(STORED_FIELDS)} FROM memories_historylexicalentry "
                "WHERE entry_id = ANY(%s)",
                [[entry_id for entry_id, _ in best]],
            )
            stored = {row[0]: _fields(row) for row in cursor.fetchall()}
        return [HistoryMatch(key, round(float(score), 6), stored[key]) for key, score in best]

    def ids_where(
        self,
        *,
        tenant_id: str,
        ids: Sequence[str] | None = None,
        user_id: str = "",
        limit: int = 10000,
    ) -> list[str]:
        if ids is not None and not ids:
            return []
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id)
        if ids is not None:
            rows = rows.filter(entry_id__in=list(ids))
        if user_id:
            rows = rows.filter(user_id=user_id)
        with self._errors():
            return list(rows.order_by("entry_id").values_list("entry_id", flat=True)[:limit])

    def count_where(self, *, tenant_id: str, user_id: str = "") -> int:
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id)
        with self._errors():
            return (rows.filter(user_id=user_id) if user_id else rows).count()

    def entries_of(self, *, tenant_id: str, user_id: str) -> Iterator[dict[str, Any]]:
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id, user_id=user_id)
        with self._errors():
            for entry in rows.order_by("entry_id").values(*STORED_FIELDS).iterator():
                yield {**entry, "occurred_at": entry["occurred_at"].isoformat()}

    def session_ids(self, *, tenant_id: str, session_pk: int) -> list[str]:
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id, session_pk=session_pk)
        with self._errors():
            return list(rows.values_list("entry_id", flat=True))

    def stored(self, *, tenant_id: str | None = None) -> Iterator[tuple[str, int]]:
        rows = HistoryLexicalEntry.objects.all()
        if tenant_id is not None:
            rows = rows.filter(tenant_id=tenant_id)
        with self._errors():
            yield from rows.order_by("entry_id").values_list("entry_id", "session_pk").iterator()

    def texts(self, *, tenant_id: str) -> Iterator[tuple[str, int, str, str]]:
        rows = HistoryLexicalEntry.objects.filter(tenant_id=tenant_id).order_by("entry_id")
        with self._errors():
            yield from rows.values_list("entry_id", "session_pk", "text", "context").iterator()

    def _errors(self) -> _StoreErrors:
        return _StoreErrors(self.label)


class _StoreErrors:
    """Turns a database error into `StoreUnavailable`, as the other engines do."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if isinstance(exc, DatabaseError):
            raise StoreUnavailable(f"{self.label}: {exc}") from exc


def _lexeme(term: str) -> str:
    """A term as a tsquery lexeme, taken whole (quoted: no operator or parser reads it)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _scope_sql(scope: HistoryScope) -> tuple[str, list[Any]]:
    clauses = ["tenant_id = %s", "user_id = %s"]
    params: list[Any] = [scope.tenant_id, scope.user_id]
    if scope.since is not None:
        clauses.append("occurred_at >= %s")
        params.append(scope.since)
    if scope.until is not None:
        clauses.append("occurred_at < %s")
        params.append(scope.until)
    if scope.exclude_session_id:
        clauses.append("session_id <> %s")
        params.append(scope.exclude_session_id)
    if scope.only_sessions is not None:
        clauses.append("session_id = ANY(%s)")
        params.append(list(scope.only_sessions))
    return " AND ".join(clauses), params


def _ranking_sql(terms: list[str], where: str, context_weight: float) -> tuple[str, list[Any]]:
    """One query ranking one user's rows that hold a term by BM25 (k1 `K1`, b `B`; a term counts
    once per field, as short turns seldom repeat one), each field with its own document
    frequencies and mean length over the user's rows, the context at `context_weight`; returns
    the SQL and its parameters after the scope's."""
    lexemes = [_lexeme(term) for term in terms]
    fields = [("text", 1.0)] + ([("context", context_weight)] if context_weight > 0 else [])
    counts, parts, params = [], [], []
    for field, _ in fields:
        for n, lexeme in enumerate(lexemes):
            counts.append(
                f"count(*) FILTER (WHERE {field}_terms @@ %s::tsquery)::float8 AS {field}_{n}"
            )
            params.append(lexeme)
    for field, weight in fields:
        norm = f"(1 + {K1} * ({1 - B} + {B} * {field}_length / stats.{field}_average))"
        for n, lexeme in enumerate(lexemes):
            df = f"stats.{field}_{n}"
            idf = f"ln(1 + (stats.total - {df} + 0.5) / ({df} + 0.5))"
            parts.append(
                f"CASE WHEN {field}_terms @@ %s::tsquery "
                f"THEN {weight} * {idf} * {K1 + 1} / {norm} ELSE 0 END"
            )
            params.append(lexeme)
    query = " | ".join(lexemes)
    holding = "text_terms @@ %s::tsquery" + (
        " OR context_terms @@ %s::tsquery" if len(fields) > 1 else ""
    )
    sql = f"""
WITH mine AS MATERIALIZED (
    SELECT entry_id, text_terms, context_terms,
        text_length::float8 AS text_length, context_length::float8 AS context_length
    FROM memories_historylexicalentry WHERE {where}
), stats AS MATERIALIZED (
    SELECT count(*)::float8 AS total,
        greatest(avg(text_length), 1) AS text_average,
        greatest(avg(context_length), 1) AS context_average,
        {", ".join(f"{c}" for c in counts)}
    FROM mine
)
SELECT entry_id, ({" + ".join(parts)}) AS score
FROM mine, stats
WHERE {holding}
ORDER BY score DESC, entry_id
LIMIT %s
"""
    return sql, [*params, query, *([query] if len(fields) > 1 else [])]  # then the limit


def _fields(row: tuple[Any, ...]) -> dict[str, Any]:
    fields = dict(zip(STORED_FIELDS, row, strict=False))
    fields["occurred_at"] = fields["occurred_at"].isoformat()  # as Elasticsearch returns it
    return fields
