"""Malformed input of every kind answers 400 (or 404/413) in the one error shape and writes
nothing: JSON nesting, unstorable strings and numbers, unknown fields, oversize bodies with and
without a Content-Length, odd ids in paths and odd query parameters."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from memories.audit.models import AuditEvent
from memories.ltm.models import LtmCard
from memories.review.deletion import fact_row_for
from memories.review.models import DeletionRequest
from memories.stm.selectors import stm_item_for
from memoryproject import redis_keys as keys
from memoryproject.errors import NotFound
from memoryproject.parsers import (
    might_hold_unstorable_values,
    nested_deeper_than,
    unstorable_values,
)
from memoryproject.redis_client import redis_connection
from profiles.models import EndUser, StableFact, UserPreference, UserProfile, UserProjectRole
from tests.factories import ProjectFactory
from transcripts.models import EventRef, Segment, Session
from transcripts.storage import transcript_storage

pytestmark = pytest.mark.django_db

EVENTS = reverse("transcripts:events", kwargs={"session_id": "s_1"})
PROFILE = reverse("profiles:profile", kwargs={"user_id": "u_1"})
PROPOSALS = reverse("memories:proposals")
RECALL = reverse("memories:recall")
IMPORT = reverse("memories:ltm-import")
SEARCH = reverse("memories:ltm-search")
COMPRESS = reverse("memories:compress", kwargs={"session_id": "s_1"})
FORGET = reverse("memories:forget", kwargs={"user_id": "u_1"})
STM = reverse("memories:stm")
PROMOTIONS = reverse("memories:promotions")

# Keys every request may touch (throttle counters, the key cache); anything else is data.
BOOKKEEPING = (":throttle:", ":apikey:", ":apikey-used:")
SOON_MS = 60_000


def assert_unchanged(before: dict[str, Any]) -> None:
    after = snapshot()
    added, removed = after["redis"] - before["redis"], before["redis"] - after["redis"]
    assert not added and not removed, f"Redis keys added {sorted(added)}, removed {sorted(removed)}"
    assert after == before


def snapshot() -> dict[str, Any]:
    """Every row, Redis key and segment object a request could write."""
    models = (
        EndUser,
        UserProfile,
        UserPreference,
        StableFact,
        UserProjectRole,
        Session,
        Segment,
        EventRef,
        LtmCard,
        DeletionRequest,
        AuditEvent,
    )
    root = Path(transcript_storage().location)  # type: ignore[attr-defined]
    client = redis_connection()
    redis_keys = {
        key.decode()
        for key in client.scan_iter(match=keys.all_keys_pattern(), count=1000)
        # A marker about to expire (an earlier test's history drain schedule lives seconds) may
        # vanish between two snapshots by itself; the data a request could write lives longer.
        if not 0 <= client.pttl(key) < SOON_MS
    }
    return {
        "rows": {model.__name__: model.objects.count() for model in models},
        "redis": {key for key in redis_keys if not any(part in key for part in BOOKKEEPING)},
        "segments": sorted(str(p) for p in root.rglob("*.jsonl")) if root.exists() else [],
    }


def send(client: APIClient, method: str, url: str, body: Any, **extra: Any):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.generic(method, url, raw, content_type="application/json", **extra)


def assert_refused(response, status: int, code: str, field: str | None = None) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert set(error) == {"code", "message", "fields"}
    if field is not None:
        assert field in error["fields"], error
    return error


def event_body(**event: Any) -> dict[str, Any]:
    return {"user_id": "u_1", "events": [{"role": "user", "content": "hello", **event}]}


def proposal(**fields: Any) -> dict[str, Any]:
    values = {
        "user_id": "u_new",
        "session_id": "s_1",
        "memory_type": "fact",
        "summary": "The user deploys createOrder on Fridays",
        "confidence": 0.9,
        "verified": True,
    }
    return {**values, **fields}


# --- nesting depth ---------------------------------------------------------------------------


def nested(depth: int) -> Any:
    """A JSON value that nests `depth` levels of arrays and objects."""
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("POST", RECALL, b"[" * 5000 + b"]" * 5000),
        ("POST", EVENTS, ('{"user_id":"u_1","events":' + "[" * 1200 + "]" * 1200 + "}").encode()),
        ("PATCH", PROFILE, ('{"profile":{"extras":' + '{"a":' * 100_000 + "}" * 100_001)),
    ],
)
def test_json_nested_past_the_limit_is_400(owner: APIClient, method, url, body) -> None:
    before = snapshot()
    raw = body if isinstance(body, bytes) else body.encode()
    response = owner.generic(method, url, raw, content_type="application/json")
    error = assert_refused(response, 400, "invalid", "__all__")
    assert "32 levels" in error["message"]
    assert_unchanged(before)


def test_depth_limit_counts_the_whole_body(owner: APIClient, settings) -> None:
    # body {1} events [2] event {3} metadata {4}: metadata may nest 28 more levels
    ok = send(owner, "POST", EVENTS, event_body(metadata={"m": nested(28)}))
    assert ok.status_code == 201, ok.json()
    before = snapshot()
    deep = send(owner, "POST", EVENTS, event_body(metadata={"m": nested(29)}))
    assert_refused(deep, 400, "invalid", "__all__")
    assert_unchanged(before)
    settings.API_MAX_JSON_DEPTH = 64  # the limit is a setting
    assert send(owner, "POST", EVENTS, event_body(metadata={"m": nested(29)})).status_code == 201


def test_depth_check_ignores_brackets_inside_strings() -> None:
    assert not nested_deeper_than(json.dumps({"text": "[" * 100, "b": ["]]]{{{"]}), 4)
    assert nested_deeper_than(json.dumps(nested(5)), 4)
    assert not nested_deeper_than(json.dumps(nested(4)), 4)
    assert not nested_deeper_than('{"a": "\\"[[[[[[", "b": [[1], [2]]}', 3)


# --- strings and numbers no store can keep ---------------------------------------------------

NUL, SURROGATE = "a\x00b", "a\ud800b"


def bad_value_cases(value: Any) -> list[tuple[str, str, Any, str]]:
    return [
        ("PATCH", PROFILE, {"profile": {"extras": {"nick": value}}}, "profile.extras.nick"),
        (
            "PATCH",
            PROFILE,
            {"preferences": [{"key": "preference.tone", "value": {"x": [value]}}]},
            "preferences.0.value.x.0",
        ),
        ("PATCH", PROFILE, {"facts": [{"key": "fact.home", "value": value}]}, "facts.0.value"),
        ("PATCH", PROFILE, {"profile": {"display_name": value}}, "profile.display_name"),
        ("POST", EVENTS, event_body(content=value), "events.0.content"),
        (
            "POST",
            EVENTS,
            event_body(metadata={"tool": {"args": value}}),
            "events.0.metadata.tool.args",
        ),
        ("POST", PROPOSALS, {"proposals": [proposal(detail={"d": value})]}, "proposals.0.detail.d"),
        ("POST", RECALL, {"user_id": "u_1", "session_id": "s_1", "query": value}, "query"),
        (
            "POST",
            IMPORT,
            {"cards": [{"memory_type": "semantic_fact", "summary": value}]},
            "cards.0.summary",
        ),
    ]


@pytest.mark.parametrize(
    ("method", "url", "body", "field"), bad_value_cases(NUL) + bad_value_cases(SURROGATE)
)
def test_nul_and_lone_surrogates_are_400_naming_the_field(
    owner: APIClient, method, url, body, field
) -> None:
    before = snapshot()
    error = assert_refused(send(owner, method, url, body), 400, "invalid", field)
    assert "NUL" in error["fields"][field][0] or "surrogate" in error["fields"][field][0]
    assert_unchanged(before)


def test_unstorable_field_names_are_refused_and_shown_escaped(owner: APIClient) -> None:
    before = snapshot()
    response = send(owner, "POST", EVENTS, event_body(metadata={"k\ud800": 1, "n\x00": 2}))
    error = assert_refused(response, 400, "invalid")
    assert set(error["fields"]) == {"events.0.metadata.k\\ud800", "events.0.metadata.n\\u0000"}
    assert_unchanged(before)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("18446744073709551616", "Integers"),  # 2^64: orjson cannot encode it
        ("9223372036854775808", "Integers"),  # 2^63
        ("-9223372036854775809", "Integers"),
        ("1e400", "finite"),
        ("-1e400", "finite"),
        ("1e20", "2^63"),  # jsonb would give it back as an integer beyond 64 bits
    ],
)
def test_numbers_beyond_what_the_stores_keep_are_400(owner: APIClient, raw, message) -> None:
    before = snapshot()
    number = 12345  # stands for the raw number in each body
    for method, url, body, field in [
        ("PATCH", PROFILE, {"profile": {"extras": {"n": number}}}, "profile.extras.n"),
        ("POST", EVENTS, event_body(metadata={"n": [number]}), "events.0.metadata.n.0"),
        (
            "POST",
            PROPOSALS,
            {"proposals": [proposal(detail={"n": number})]},
            "proposals.0.detail.n",
        ),
    ]:
        raw_body = json.dumps(body).replace(str(number), raw).encode()
        response = owner.generic(method, url, raw_body, content_type="application/json")
        error = assert_refused(response, 400, "invalid", field)
        assert message in error["fields"][field][0]
    assert_unchanged(before)


ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**65)  # around the 64-bit limits
    | st.integers(min_value=-(2**65), max_value=-(2**62))
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children),
    max_leaves=10,
)


@given(value=ANY_JSON, ascii_only=st.booleans())
def test_the_quick_look_never_misses_what_the_full_walk_finds(value, ascii_only: bool) -> None:
    # The parser walks the parsed body only when a quick look at its text sees a suspect.
    text = json.dumps(value, ensure_ascii=ascii_only)
    if unstorable_values(json.loads(text)):
        assert might_hold_unstorable_values(text)


def test_the_largest_accepted_integers_round_trip(owner: APIClient) -> None:
    extras = {"max": 2**63 - 1, "min": -(2**63), "big": 9.2e18, "small": -1.5e-300}
    response = send(owner, "PATCH", PROFILE, {"profile": {"extras": extras}})
    assert response.status_code == 200, response.json()
    assert owner.get(PROFILE).json()["profile"]["extras"] == extras


def test_a_proposal_refused_for_its_detail_leaves_no_end_user(owner: APIClient) -> None:
    before = snapshot()
    response = send(
        owner, "POST", PROPOSALS, {"proposals": [proposal(), proposal(detail={"d": NUL})]}
    )
    assert_refused(response, 400, "invalid", "proposals.1.detail.d")
    assert not EndUser.objects.filter(external_id="u_new").exists()
    assert_unchanged(before)


# --- unknown fields --------------------------------------------------------------------------

CARD = {"memory_type": "semantic_fact", "summary": "Orders ship from Leipzig"}


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "POST",
            RECALL,
            {"user_id": "u_1", "session_id": "s_1", "query": "q", "top_k": 3},
            "top_k",
        ),
        ("POST", EVENTS, {**event_body(), "session": "s_1"}, "session"),
        ("POST", EVENTS, event_body(colour="red"), "events.0.colour"),
        ("PATCH", PROFILE, {"profile": {"language": "de"}, "prefs": []}, "prefs"),
        ("PATCH", PROFILE, {"profile": {"langauge": "de"}}, "profile.langauge"),
        (
            "PATCH",
            PROFILE,
            {"preferences": [{"key": "preference.tone", "value": 1, "weight": 2}]},
            "preferences.0.weight",
        ),
        ("PATCH", PROFILE, {"roles": [{"project": "shop", "role": "dev", "x": 1}]}, "roles.0.x"),
        ("PATCH", PROFILE, {"facts": [{"key": "fact.home", "value": 1, "ttl": 3}]}, "facts.0.ttl"),
        ("POST", PROPOSALS, {"proposals": [proposal()], "dry": True}, "dry"),
        ("POST", PROPOSALS, {"proposals": [proposal(score=5)]}, "proposals.0.score"),
        (
            "POST",
            PROPOSALS,
            {"proposals": [proposal(source={"message_ids": [], "urls": []})]},
            "proposals.0.source.urls",
        ),
        ("POST", IMPORT, {"cards": [{**CARD, "body": "x"}]}, "cards.0.body"),
        ("POST", IMPORT, {"cards": [CARD], "upsert": True}, "upsert"),
        ("POST", SEARCH, {"query": "q", "top_k": 3}, "top_k"),
        ("POST", COMPRESS, {"budget_tokens": 500, "budget": 500}, "budget"),
        ("POST", FORGET, {"reason": "asked", "why": "x"}, "why"),
        ("DELETE", reverse("memories:fact", kwargs={"fact_id": "fact_1"}), {"reasn": ""}, "reasn"),
    ],
)
def test_unknown_fields_are_400_naming_the_field(
    tenant, owner: APIClient, method, url, body, field
) -> None:
    ProjectFactory(tenant=tenant, key="shop")
    send(owner, "POST", EVENTS, event_body())  # the session exists, so only the field is wrong
    before = snapshot()
    error = assert_refused(send(owner, method, url, body), 400, "invalid", field)
    assert error["fields"][field] == ["Unknown field."]
    assert_unchanged(before)


def test_unknown_fields_are_named_with_the_other_errors(owner: APIClient) -> None:
    response = send(owner, "POST", RECALL, {"user_id": "bad id", "query": "q", "top_k": 3})
    error = assert_refused(response, 400, "invalid")
    assert set(error["fields"]) == {"user_id", "session_id", "top_k"}


@pytest.mark.parametrize(
    ("url", "query", "field"),
    [
        (EVENTS, {"after": 0, "offset": 3}, "offset"),
        (STM, {"user_id": "u_1", "page": 2}, "page"),
        (PROMOTIONS, {"state": "pending"}, "state"),
    ],
)
def test_unknown_query_parameters_are_400(owner: APIClient, url, query, field) -> None:
    send(owner, "POST", EVENTS, event_body())
    before = snapshot()
    assert_refused(owner.get(url, query), 400, "invalid", field)
    assert owner.get(url, {**query, "format": "json"}).status_code == 400
    assert_unchanged(before)


def test_drf_format_parameter_is_still_allowed(owner: APIClient) -> None:
    send(owner, "POST", EVENTS, event_body())
    assert owner.get(EVENTS, {"format": "json"}).status_code == 200


# --- body size -------------------------------------------------------------------------------


def big_body(size: int) -> bytes:
    head = b'{"user_id": "u_1", "events": [{"role": "user", "content": "'
    return head + b"x" * (size - len(head) - 4) + b'"}]}'


@pytest.mark.parametrize("size", [4_200_000, 4_500_000, 5_000_000, 12_000_000])
def test_oversize_bodies_are_413_json(owner: APIClient, size: int) -> None:
    before = snapshot()
    response = owner.generic("POST", EVENTS, big_body(size), content_type="application/json")
    assert_refused(response, 413, "payload_too_large")
    assert_unchanged(before)


def test_413_even_when_django_guard_is_lower_than_ours(owner: APIClient, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    before = snapshot()
    response = owner.generic("POST", EVENTS, big_body(20_000), content_type="application/json")
    assert_refused(response, 413, "payload_too_large")
    assert_unchanged(before)


def chunked(client: APIClient, method: str, url: str, body: bytes):
    """A request without Content-Length, its body streamed as with Transfer-Encoding: chunked."""
    return client.generic(
        method,
        url,
        b"",
        content_type="application/json",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body)},
    )


def test_a_body_without_content_length_is_read_and_limited(owner: APIClient) -> None:
    before = snapshot()
    assert_refused(chunked(owner, "POST", EVENTS, big_body(5_000_000)), 413, "payload_too_large")
    assert_unchanged(before)
    small = chunked(owner, "POST", EVENTS, json.dumps(event_body(content="streamed")).encode())
    assert small.status_code == 201, small.json()
    assert owner.get(EVENTS).json()["events"][0]["content"] == "streamed"


def test_a_content_length_that_is_not_a_number_is_400(owner: APIClient) -> None:
    before = snapshot()
    response = owner.generic(
        "POST", EVENTS, b"{}", content_type="application/json", CONTENT_LENGTH="1e3"
    )
    assert_refused(response, 400, "invalid")
    assert_unchanged(before)


# --- list sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "PATCH",
            PROFILE,
            {"preferences": [{"key": f"preference.k{i}", "value": i} for i in range(10_000)]},
            "preferences",
        ),
        (
            "PATCH",
            PROFILE,
            {"facts": [{"key": f"fact.k{i}", "value": i} for i in range(101)]},
            "facts",
        ),
        (
            "PATCH",
            PROFILE,
            {"roles": [{"project": f"p{i}", "role": "dev"} for i in range(101)]},
            "roles",
        ),
        (
            "PATCH",
            PROFILE,
            {"preferences": [{"key": "preference.a", "value": 1, "source_ids": ["m"] * 201}]},
            "preferences.0.source_ids",
        ),
        ("POST", PROPOSALS, {"proposals": [proposal()] * 101}, "proposals"),
        ("POST", SEARCH, {"query": "q", "statuses": ["active"] * 3}, "statuses"),
        ("POST", SEARCH, {"query": "q", "memory_types": ["semantic_fact"] * 50}, "memory_types"),
        (
            "POST",
            IMPORT,
            {"cards": [{**CARD, "source_refs": {f"k{i}": [] for i in range(21)}}]},
            "cards.0.source_refs",
        ),
    ],
)
def test_lists_past_their_cap_are_400_at_once(owner: APIClient, method, url, body, field) -> None:
    before = snapshot()
    started = time.perf_counter()
    assert_refused(send(owner, method, url, body), 400, "invalid", field)
    assert time.perf_counter() - started < 5
    assert_unchanged(before)


def test_cards_past_the_import_cap_are_413_at_once(owner: APIClient, settings) -> None:
    before = snapshot()
    started = time.perf_counter()
    body = {"cards": [CARD] * (settings.LTM_IMPORT_MAX_CARDS + 1)}
    assert_refused(send(owner, "POST", IMPORT, body), 413, "payload_too_large", "cards")
    assert time.perf_counter() - started < 5
    assert_unchanged(before)


# --- ids in paths and query parameters -------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/facts/fact_%C2%B2",  # fact_²: str.isdigit() says yes
        "/v1/facts/fact_%D9%A1",  # fact_١ (Arabic-Indic one)
        "/v1/facts/fact_%00",
        "/v1/memories/stm_%D9%A1_0123456789abcdef",
        "/v1/memories/abc%00def",
        "/v1/ltm/cards/ltm_%00",
        "/v1/ltm/cards/ltm_%ED%A0%80",  # an encoded lone surrogate
        "/v1/deletions/del_%00",
        "/v1/sessions/s%E2%80%A8/events",
        "/v1/users/u%00/profile",
        "/v1/ltm/cards/" + "a" * 129,
    ],
)
def test_odd_ids_in_paths_are_404_json(owner: APIClient, path: str) -> None:
    before = snapshot()
    method = "DELETE" if path.startswith("/v1/facts/") else "GET"
    assert_refused(owner.generic(method, path), 404, "not_found")
    assert_unchanged(before)


@pytest.mark.parametrize("fact_id", ["fact_²", "fact_١", "pref_¹", "fact_" + "9" * 40, "fact_0"])
def test_fact_ids_are_parsed_as_ascii_digits_only(tenant, fact_id: str) -> None:
    with pytest.raises(NotFound):
        fact_row_for(tenant=tenant, fact_id=fact_id)


@pytest.mark.parametrize(
    "item_id", ["stm_١_0123456789abcdef", "stm_1_0123456789abcdef\n", "stm_" + "9" * 5000 + "_0"]
)
def test_item_ids_are_parsed_as_ascii_digits_only(tenant, item_id: str) -> None:
    with pytest.raises(NotFound):
        stm_item_for(tenant=tenant, item_id=item_id)


@pytest.mark.parametrize(
    ("url", "query", "field"),
    [
        (EVENTS, {"after": 10**30}, "after"),
        (EVENTS, {"limit": 10**30}, "limit"),
        (EVENTS, {"after": "1" * 3000}, "after"),  # within API_MAX_URL_BYTES (else 414)
        (STM, {"user_id": "u_1", "before": "nan"}, "before"),
        (STM, {"user_id": "u_1", "before": "1e400"}, "before"),
        (STM, {"user_id": "u_1", "limit": "²"}, "limit"),
        (STM, {"user_id": "u_1", "session_id": "a\x00b"}, "session_id"),
        (PROMOTIONS, {"limit": "9" * 400}, "limit"),
    ],
)
def test_odd_query_parameters_are_400(owner: APIClient, url, query, field) -> None:
    send(owner, "POST", EVENTS, event_body())
    before = snapshot()
    assert_refused(owner.get(url, query), 400, "invalid", field)
    assert_unchanged(before)


def test_too_many_query_parameters_are_400_json(owner: APIClient) -> None:
    before = snapshot()
    # 1001 fields, over Django's 1000, in a URL within API_MAX_URL_BYTES
    query = "&".join(["p=1"] * 1001)
    assert_refused(owner.get(f"{STM}?{query}"), 400, "invalid")
    assert_unchanged(before)


def test_requests_django_refuses_outside_the_api_views_are_400_json_but_html_in_admin() -> None:
    client = APIClient()
    api = client.get("/healthz", HTTP_HOST="evil.example")
    assert_refused(api, 400, "invalid")
    admin = client.get("/admin/", HTTP_HOST="evil.example")
    assert admin.status_code == 400
    assert admin["Content-Type"].startswith("text/html")


# --- types a JSON body must not bend -----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        (RECALL, {"user_id": "u_1", "session_id": "s_1", "query": "hi", "explain": 0}, "explain"),
        (PROPOSALS, {"proposals": [proposal(remember=1)]}, "proposals.0.remember"),
        (PROPOSALS, {"proposals": [proposal(verified="yes")]}, "proposals.0.verified"),
        (PROPOSALS, {"proposals": [proposal(importance=False)]}, "proposals.0.importance"),
        (PROPOSALS, {"proposals": [proposal(confidence="0.9")]}, "proposals.0.confidence"),
        (RECALL, {"user_id": "u_1", "session_id": "s_1", "query": "hi", "k": "5"}, "k"),
        (RECALL, {"user_id": "u_1", "session_id": "s_1", "query": "hi", "k": True}, "k"),
        (SEARCH, {"query": "hi", "k": "10"}, "k"),
        (
            IMPORT,
            {"cards": [{"memory_type": "semantic", "summary": "x", "importance": True}]},
            "cards.0.importance",
        ),
    ],
)
def test_booleans_and_numbers_in_bodies_keep_their_json_type(
    owner: APIClient, url, body, field
) -> None:
    before = snapshot()
    assert_refused(send(owner, "POST", url, body), 400, "invalid", field)
    assert_unchanged(before)


@pytest.mark.parametrize("body", [b"null", b"[]", b'"erase"', b"7"])
def test_a_deletion_request_body_must_be_an_object_when_sent(
    owner: APIClient, tenant, body
) -> None:
    EndUser.objects.create(tenant=tenant, external_id="u_1")
    before = snapshot()
    assert_refused(send(owner, "POST", FORGET, body), 400, "invalid")
    assert_unchanged(before)


def test_a_deletion_request_without_a_body_is_accepted(owner: APIClient, tenant) -> None:
    EndUser.objects.create(tenant=tenant, external_id="u_1")
    response = owner.post(FORGET)
    assert response.status_code == 202, response.content
    assert DeletionRequest.objects.filter(tenant=tenant, target="u_1").count() == 1


@pytest.mark.parametrize("padding", [" ", "\x1c", "\u3000"])
def test_a_text_is_held_to_its_maximum_length_as_sent_not_as_trimmed(
    owner: APIClient, tenant, padding: str
) -> None:
    # The schema's maxLength describes the text as sent; trimming it first let a reason of the
    # maximum length followed by spaces (or characters Python counts as spaces) through.
    EndUser.objects.create(tenant=tenant, external_id="u_1")
    before = snapshot()
    body = {"reason": "r" * 2000 + padding * 5}
    error = assert_refused(send(owner, "POST", FORGET, body), 400, "invalid", "reason")
    assert "2000" in error["fields"]["reason"][0]
    assert_unchanged(before)
    accepted = owner.post(FORGET, {"reason": "r" * 2000}, format="json")
    assert accepted.status_code == 202, accepted.content
