"""Stated conclusions become the task's working memory, and only that."""

from __future__ import annotations

from typing import Any

import pytest

from memories.stm.items import MemoryType
from memories.vocabulary import Vocabulary, default_vocabulary
from memories.write.candidates import Candidate, SourceKind
from memories.write.extractors import ASSISTANT_CONFIDENCE, ExtractionContext, RuleExtractor


def said(role: str, content: str, *, seq: int = 1) -> dict[str, Any]:
    return {"seq": seq, "id": f"msg_{seq}", "role": role, "content": content, "metadata": {}}


def extract(
    *events: dict[str, Any], task_id: str = "bug-789", vocabulary: Vocabulary | None = None
) -> list[Candidate]:
    context = ExtractionContext(
        user_id="u_1",
        session_id="s_1",
        task_id=task_id,
        vocabulary=vocabulary or default_vocabulary(),
    )
    return RuleExtractor().extract(events=list(events), context=context)


def only(*events: dict[str, Any], **kwargs: Any) -> Candidate:
    found = extract(*events, **kwargs)
    assert len(found) == 1, found
    return found[0]


# --- stated conclusions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("the database is ruled out", [("exclusion", ("database", "数据库"))]),
        ("It's not the network.", [("exclusion", ("network", "网络"))]),
        ("Root cause is the connection pool.", [("conclusion", ("connection pool", "连接池"))]),
        ("The root cause was the db pool.", [("conclusion", ("connection pool", "连接池"))]),
        ("根因是线程池打满", [("conclusion", ("线程池", "thread pool"))]),
        ("已排除数据库问题", [("exclusion", ("数据库", "database"))]),
        ("问题出在连接池", [("conclusion", ("连接池", "connection pool"))]),
        (
            "已排除数据库问题，问题出在连接池。",
            [("exclusion", ("数据库", "database")), ("conclusion", ("连接池", "connection pool"))],
        ),
        (
            "The database looks fine, but the root cause is the db pool on billing-api.",
            [("conclusion", ("billing-api", "connection pool", "连接池"))],
        ),
    ],
)
def test_the_assistants_conclusions_are_task_scoped_and_less_trusted(
    text: str, kinds: list[tuple[str, tuple[str, ...]]]
) -> None:
    found = extract(said("assistant", text))

    assert [(c.subtype, c.entities) for c in found] == kinds
    for candidate in found:
        assert candidate.memory_type == MemoryType.FACT
        assert candidate.source_kind == SourceKind.ASSISTANT
        assert candidate.confidence == ASSISTANT_CONFIDENCE
        assert candidate.verified is False
        assert candidate.task_id == "bug-789"
        assert not candidate.remember


def test_the_users_conclusion_is_trusted_more_than_the_assistants() -> None:
    by_user = only(said("user", "问题出在连接池"))
    by_assistant = only(said("assistant", "问题出在连接池"))

    assert by_user.subtype == by_assistant.subtype == "conclusion"
    assert by_user.confidence == 0.85 > by_assistant.confidence
    assert by_user.verified is True and by_assistant.verified is False
    assert by_user.detail["reason"] == "states a finding (问题出在)"


def test_a_users_statement_about_a_known_system_stays_a_stated_fact() -> None:
    # what the user states of their world may be promoted; a finding of the task may not
    found = only(said("user", "createOrder 超时的根因是线程池饱和"))

    assert (found.subtype, found.confidence) == ("stated", 0.8)


@pytest.mark.parametrize(
    "text",
    [
        "Maybe the root cause is the pool.",
        "可能问题出在连接池",
        "问题出在哪里？",
        "Is the root cause the connection pool?",
    ],
)
def test_guesses_and_questions_are_no_conclusions(text: str) -> None:
    assert extract(said("assistant", text)) == []


def test_a_tenant_adds_its_own_conclusion_wording() -> None:
    vocabulary = default_vocabulary().extended([("conclusion", r"\bthe smoking gun is\b")])

    found = only(said("assistant", "The smoking gun is the db pool."), vocabulary=vocabulary)

    assert found.subtype == "conclusion"
    assert extract(said("assistant", "The smoking gun is the db pool.")) == []
