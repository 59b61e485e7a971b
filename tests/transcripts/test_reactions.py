"""The layers above react to an append through one table (`transcripts.reactions`), filled by
the memories app: history inside the append's transaction, extraction after its commit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from memories.history.services import history_on_append
from memories.write.extraction import extraction_on_append
from tests.transcripts.test_events_api import append
from transcripts.models import Session
from transcripts.reactions import Appended, append_reactions, register_append_reactions


@pytest.fixture
def reactions() -> Iterator[None]:
    """Restores the app's table after a test that registered its own."""
    within, after_commit = append_reactions()
    yield
    register_append_reactions(within=within, after_commit=after_commit)


def test_the_memories_app_registers_history_within_and_extraction_after_commit() -> None:
    assert append_reactions() == ((history_on_append,), (extraction_on_append,))


@pytest.mark.django_db
def test_a_failing_reaction_after_commit_fails_neither_the_append_nor_the_next_reaction(
    owner: APIClient, reactions, django_capture_on_commit_callbacks, caplog
) -> None:
    seen: list[tuple[str, Appended]] = []

    def within(*, appended: Appended) -> None:
        seen.append(("within", appended))

    def broker_down(*, appended: Appended) -> None:
        raise ConnectionError("the broker is down")

    def after(*, appended: Appended) -> None:
        seen.append(("after", appended))

    register_append_reactions(within=[within], after_commit=[broker_down, after])
    assert append(owner, "s-1", [{"role": "user", "content": "first"}]).status_code == 201
    seen.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = append(
            owner,
            "s-1",
            [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
        )

    assert response.status_code == 201, response.content
    session = Session.objects.get(external_id="s-1")
    assert session.event_count == 3
    expected = Appended(
        session_pk=session.pk, first_seq=2, last_seq=3, roles=frozenset({"user", "assistant"})
    )
    assert seen == [("within", expected), ("after", expected)]
    assert "broker_down failed after the append to session" in caplog.text


@pytest.mark.django_db
def test_a_failing_reaction_within_the_transaction_stores_nothing(
    owner: APIClient, reactions
) -> None:
    def refuses(*, appended: Appended) -> None:
        raise RuntimeError("the outbox row could not be written")

    register_append_reactions(within=[refuses])

    with pytest.raises(RuntimeError):
        append(owner, "s-1", [{"role": "user", "content": "hello"}])

    assert not Session.objects.filter(external_id="s-1", event_count__gt=0).exists()
