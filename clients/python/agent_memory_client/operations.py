"""Every operation of the API (v1), built once for both clients: method, path, body, query."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_memory_client._core import Operation, drop_none, segment, with_event_ids
from agent_memory_client.models import CardIn, Proposal


def _reason(reason: str | None) -> dict[str, Any] | None:
    return {"reason": reason} if reason else None


def append_events(
    session_id: str,
    body: dict[str, Any],
    make_id: Callable[[], str],
) -> Operation:
    events = with_event_ids(list(body.get("events", ())), make_id)
    return Operation(
        "POST",
        f"/v1/sessions/{segment(session_id)}/events",
        json={**body, "events": events},
        repeatable=True,  # every event carries an id: a repeat writes nothing
    )


def replay_events(session_id: str, query: dict[str, Any]) -> Operation:
    return Operation(
        "GET", f"/v1/sessions/{segment(session_id)}/events", params=query, repeatable=True
    )


def verify_session(session_id: str) -> Operation:
    return Operation("GET", f"/v1/sessions/{segment(session_id)}/verify", repeatable=True)


def get_profile(user_id: str) -> Operation:
    return Operation("GET", f"/v1/users/{segment(user_id)}/profile", repeatable=True)


def update_profile(user_id: str, patch: dict[str, Any]) -> Operation:
    return Operation("PATCH", f"/v1/users/{segment(user_id)}/profile", json=patch)


def propose_memories(proposals: Sequence[Proposal], dry_run: bool) -> Operation:
    return Operation(
        "POST",
        "/v1/memories/proposals",
        json={"proposals": list(proposals)},
        params={"dry_run": "true"} if dry_run else None,
        repeatable=dry_run,
    )


def list_stm(query: dict[str, Any]) -> Operation:
    return Operation("GET", "/v1/memories/stm", params=drop_none(query), repeatable=True)


def get_memory(item_id: str) -> Operation:
    return Operation("GET", f"/v1/memories/{segment(item_id)}", repeatable=True)


def update_memory(item_id: str, changes: dict[str, Any]) -> Operation:
    # Repeatable only when it names the version it changes: a repeat is then a 409.
    return Operation(
        "PATCH",
        f"/v1/memories/{segment(item_id)}",
        json=changes,
        repeatable="expected_version" in changes,
    )


def delete_memory(item_id: str) -> Operation:
    return Operation("DELETE", f"/v1/memories/{segment(item_id)}", expect_body=False)


def import_cards(cards: Sequence[CardIn]) -> Operation:
    return Operation(
        "POST",
        "/v1/ltm/cards:import",
        json={"cards": list(cards)},
        repeatable=bool(cards) and all(card.get("id") for card in cards),  # updates by id
    )


def list_cards(query: dict[str, Any]) -> Operation:
    return Operation("GET", "/v1/ltm/cards", params=drop_none(query), repeatable=True)


def update_card(memory_id: str, changes: dict[str, Any]) -> Operation:
    return Operation(
        "PATCH",
        f"/v1/ltm/cards/{segment(memory_id)}",
        json=changes,
        repeatable="expected_version" in changes,
    )


def get_card(memory_id: str) -> Operation:
    return Operation("GET", f"/v1/ltm/cards/{segment(memory_id)}", repeatable=True)


def delete_card(memory_id: str, reason: str | None) -> Operation:
    # An open request for the same card is answered as is: safe to repeat.
    return Operation(
        "DELETE", f"/v1/ltm/cards/{segment(memory_id)}", json=_reason(reason), repeatable=True
    )


def search_ltm(body: dict[str, Any]) -> Operation:
    return Operation("POST", "/v1/ltm/search", json=body, repeatable=True)


def recall(body: dict[str, Any]) -> Operation:
    # Not repeated without an answer: each recall is recorded in the session's transcript.
    return Operation("POST", "/v1/recall", json=body)


def compress_session(session_id: str, body: dict[str, Any]) -> Operation:
    return Operation(
        "POST", f"/v1/sessions/{segment(session_id)}/compress", json=body, repeatable=True
    )


def forget_user(user_id: str, reason: str | None) -> Operation:
    return Operation(
        "POST", f"/v1/users/{segment(user_id)}/forget", json=_reason(reason), repeatable=True
    )


def delete_fact(fact_id: str, reason: str | None) -> Operation:
    return Operation(
        "DELETE", f"/v1/facts/{segment(fact_id)}", json=_reason(reason), repeatable=True
    )


def get_deletion(request_id: str) -> Operation:
    return Operation("GET", f"/v1/deletions/{segment(request_id)}", repeatable=True)


def list_promotions(query: dict[str, Any]) -> Operation:
    return Operation("GET", "/v1/promotions", params=drop_none(query), repeatable=True)


def export_user(user_id: str) -> Operation:
    return Operation("GET", f"/v1/users/{segment(user_id)}/export", repeatable=True)


def get_user_memories(user_id: str, query: dict[str, Any]) -> Operation:
    return Operation(
        "GET", f"/v1/users/{segment(user_id)}/memories", params=drop_none(query), repeatable=True
    )
