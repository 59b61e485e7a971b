from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from profiles.models import EndUser
from transcripts.models import EventRef, Segment, Session
from transcripts.selectors import events_after
from transcripts.services import session_erase
from transcripts.storage import transcript_storage


def events_url(session_id: str) -> str:
    return reverse("transcripts:events", kwargs={"session_id": session_id})


def append(client: APIClient, session_id: str, events: list[dict], user_id: str = "u_1", **extra):
    body = {"user_id": user_id, "events": events, **extra}
    return client.post(events_url(session_id), body, format="json")


def layer0_counts() -> tuple[int, int, int, int, int]:
    """Rows and stored objects of Layer 0, to prove a refused request wrote nothing."""
    root = Path(transcript_storage().location)  # type: ignore[attr-defined]
    objects = len(list(root.rglob("*.jsonl"))) if root.exists() else 0
    return (
        Session.objects.count(),
        Segment.objects.count(),
        EventRef.objects.count(),
        EndUser.objects.count(),
        objects,
    )


@pytest.mark.django_db
def test_append_then_replay_keeps_order_ids_and_content(owner: APIClient) -> None:
    # when two batches are appended
    first = append(
        owner,
        "s-1",
        [
            {"id": "m-1", "role": "user", "content": "createOrder 超时了，帮我排查"},
            {"role": "assistant", "content": "Looking at the logs.", "metadata": {"model": "x"}},
        ],
        task_id="bug-456",
    )
    second = append(owner, "s-1", [{"role": "tool", "content": "ok", "tool_call_id": "call-1"}])

    # then each gets server sequence numbers and ids, in order
    assert first.status_code == 201, first.json()
    assert [e["seq"] for e in first.json()["events"]] == [1, 2]
    assert first.json()["events"][0]["id"] == "m-1"
    assert first.json()["events"][1]["id"].startswith("msg_")
    assert second.json()["events"] == [{"seq": 3, "id": second.json()["events"][0]["id"]}]

    replay = owner.get(events_url("s-1"))
    body = replay.json()
    assert replay.status_code == 200
    assert body["user_id"] == "u_1" and body["task_id"] == "bug-456"
    assert [(e["seq"], e["role"]) for e in body["events"]] == [
        (1, "user"),
        (2, "assistant"),
        (3, "tool"),
    ]
    assert body["events"][0]["content"] == "createOrder 超时了，帮我排查"
    assert body["events"][1]["metadata"] == {"model": "x"}
    assert body["events"][2]["tool_call_id"] == "call-1"

    page = owner.get(events_url("s-1"), {"after": 1, "limit": 1}).json()
    assert [e["seq"] for e in page["events"]] == [2]
    assert page["has_more"] is True and page["next_after"] == 2


@pytest.mark.django_db
def test_retry_with_same_ids_returns_original_ids_and_writes_nothing(owner: APIClient) -> None:
    batch = [
        {"id": "m-1", "role": "user", "content": "remember this"},
        {"role": "assistant", "content": "ok"},
    ]
    created = append(owner, "s-1", batch)
    before = layer0_counts()

    retried = append(owner, "s-1", batch)

    assert created.status_code == 201
    assert retried.status_code == 200
    assert retried.json()["created"] is False
    assert retried.json()["events"] == created.json()["events"]
    assert layer0_counts() == before


@pytest.mark.django_db
def test_same_id_with_other_content_is_a_conflict_and_writes_nothing(owner: APIClient) -> None:
    append(owner, "s-1", [{"id": "m-1", "role": "user", "content": "first"}])
    before = layer0_counts()

    response = append(owner, "s-1", [{"id": "m-1", "role": "user", "content": "changed"}])

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "duplicate_event_id"
    assert layer0_counts() == before


@pytest.mark.django_db
def test_session_of_another_user_is_a_conflict(owner: APIClient) -> None:
    append(owner, "s-1", [{"role": "user", "content": "hi"}], user_id="u_1")
    before = layer0_counts()

    response = append(owner, "s-1", [{"role": "user", "content": "hi"}], user_id="u_2")

    assert response.status_code == 409
    assert "user_id" in response.json()["error"]["fields"]
    assert layer0_counts()[:3] == before[:3]


@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_appenders_lose_nothing_and_never_interleave(tenant, client_for) -> None:
    clients = [client_for(tenant) for _ in range(8)]
    batches_per_client, batch_size = 5, 4
    errors: list[str] = []

    def run(index: int, client: APIClient) -> None:
        try:
            for b in range(batches_per_client):
                events = [
                    {"id": f"c{index}-b{b}-e{e}", "role": "user", "content": f"{index}/{b}/{e}"}
                    for e in range(batch_size)
                ]
                response = append(client, "shared", events)
                if response.status_code != 201:
                    errors.append(f"{response.status_code} {response.content!r}")
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    events = clients[0].get(events_url("shared"), {"limit": 1000}).json()["events"]
    total = 8 * batches_per_client * batch_size
    assert [e["seq"] for e in events] == list(range(1, total + 1))
    assert len({e["id"] for e in events}) == total
    # every batch is contiguous and in the order it was sent
    for start in range(0, total, batch_size):
        chunk = events[start : start + batch_size]
        prefixes = {e["id"].rsplit("-e", 1)[0] for e in chunk}
        assert len(prefixes) == 1
        assert [e["id"][-1] for e in chunk] == [str(i) for i in range(batch_size)]
    # and per client, batches keep their order
    for index in range(8):
        mine = [e["content"] for e in events if e["id"].startswith(f"c{index}-")]
        assert mine == [f"{index}/{b}/{e}" for b in range(5) for e in range(4)]
    verify = clients[0].get(reverse("transcripts:verify", kwargs={"session_id": "shared"}))
    assert verify.json()["ok"] is True


@pytest.mark.django_db
def test_editing_one_byte_of_a_segment_makes_verify_fail_and_name_it(owner: APIClient) -> None:
    for n in range(3):
        append(owner, "s-1", [{"role": "user", "content": f"message {n}"}])
    url = reverse("transcripts:verify", kwargs={"session_id": "s-1"})
    assert owner.get(url).json() == {
        "session_id": "s-1",
        "ok": True,
        "segments_checked": 3,
        "events_checked": 3,
        "problems": [],
    }
    segment = Segment.objects.get(session__external_id="s-1", number=2)
    path = Path(transcript_storage().path(segment.path))
    data = bytearray(path.read_bytes())
    position = data.index(b"message 1") + len("message ")
    data[position] = ord("7")
    path.write_bytes(bytes(data))

    report = owner.get(url).json()

    assert report["ok"] is False
    assert [p["segment"] for p in report["problems"]] == [2]
    assert report["problems"][0]["path"] == segment.path
    assert "modified" in report["problems"][0]["reason"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"events": [{"role": "user", "content": "x"}]}, "user_id"),
        ({"user_id": "u_1"}, "events"),
        ({"user_id": "u_1", "events": []}, "events"),
        ({"user_id": "u_1", "events": [{"role": "robot", "content": "x"}]}, "events.0.role"),
        ({"user_id": "u_1", "events": [{"role": "user"}]}, "events.0.content"),
        ({"user_id": "u_1", "events": [{"role": "user", "content": 7}]}, "events.0.content"),
        ({"user_id": "u 1", "events": [{"role": "user", "content": "x"}]}, "user_id"),
        (
            {"user_id": "u_1", "events": [{"role": "tool", "content": "x"}]},
            "events.0.tool_call_id",
        ),
        (
            {
                "user_id": "u_1",
                "events": [
                    {"role": "user", "content": "fine"},
                    {"role": "user", "content": "x", "metadata": "not an object"},
                ],
            },
            "events.1.metadata",
        ),
        (
            {
                "user_id": "u_1",
                "events": [
                    {"id": "same", "role": "user", "content": "a"},
                    {"id": "same", "role": "user", "content": "b"},
                ],
            },
            "events",
        ),
    ],
)
def test_bad_input_is_400_in_the_error_shape_and_writes_nothing(
    owner: APIClient, body: dict, field: str
) -> None:
    append(owner, "s-1", [{"role": "user", "content": "already here"}])
    before = layer0_counts()

    response = owner.post(events_url("s-1"), body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]
    assert layer0_counts() == before


@pytest.mark.django_db
def test_invalid_json_is_400(owner: APIClient) -> None:
    before = layer0_counts()
    response = owner.post(events_url("s-1"), data="{nope", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert layer0_counts() == before


@pytest.mark.django_db
def test_oversized_content_is_400_and_too_many_events_or_bytes_is_413(
    owner: APIClient, settings
) -> None:
    settings.TRANSCRIPT_MAX_CONTENT_CHARS = 100
    settings.TRANSCRIPT_MAX_EVENTS_PER_APPEND = 3
    settings.API_MAX_BODY_BYTES = 2000
    before = layer0_counts()

    too_long = append(owner, "s-1", [{"role": "user", "content": "x" * 101}])
    too_many = append(owner, "s-1", [{"role": "user", "content": "x"}] * 4)
    too_big = owner.post(
        events_url("s-1"),
        data=json.dumps({"user_id": "u_1", "events": [{"role": "user", "content": "y" * 3000}]}),
        content_type="application/json",
    )

    assert too_long.status_code == 400
    assert "events.0.content" in too_long.json()["error"]["fields"]
    assert too_many.status_code == 413
    assert too_many.json()["error"]["code"] == "payload_too_large"
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "payload_too_large"
    assert layer0_counts() == before


@pytest.mark.django_db
def test_replay_query_is_validated(owner: APIClient) -> None:
    append(owner, "s-1", [{"role": "user", "content": "x"}])
    response = owner.get(events_url("s-1"), {"after": -1, "limit": 5000})
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"after", "limit"}


@pytest.mark.django_db
def test_another_tenant_gets_404_on_sessions_events_and_verify(
    owner: APIClient, stranger: APIClient
) -> None:
    append(owner, "s-1", [{"role": "user", "content": "private"}])
    before = layer0_counts()

    replay = stranger.get(events_url("s-1"))
    verify = stranger.get(reverse("transcripts:verify", kwargs={"session_id": "s-1"}))
    # an append to the same id lands in the stranger's own namespace, never in ours
    own = append(stranger, "s-1", [{"role": "user", "content": "mine"}])

    assert replay.status_code == 404 and replay.json()["error"]["code"] == "not_found"
    assert verify.status_code == 404
    assert own.status_code == 201
    ours = owner.get(events_url("s-1")).json()["events"]
    assert [e["content"] for e in ours] == ["private"]
    assert Session.objects.count() == before[0] + 1


@pytest.mark.django_db
def test_verify_transcripts_command_reports_broken_segments(owner: APIClient, capsys) -> None:
    from django.core.management import CommandError, call_command

    append(owner, "s-1", [{"role": "user", "content": "a"}])
    call_command("verify_transcripts")
    assert "0 broken" in capsys.readouterr().out

    segment = Segment.objects.get(session__external_id="s-1")
    Path(transcript_storage().path(segment.path)).unlink()
    with pytest.raises(CommandError):
        call_command("verify_transcripts")
    assert "missing" in capsys.readouterr().out


def test_transcript_storage_is_this_runs_own_folder() -> None:
    assert settings.STORAGES["transcripts"]["OPTIONS"]["location"].startswith("/")
    assert "memory-test-" in settings.STORAGES["transcripts"]["OPTIONS"]["location"]


# --- lossless transcripts: line separators, old segments, arbitrary Unicode -----------------

# Every character some reader takes for a line break; json.dumps escapes all but the last three.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def verify_url(session_id: str) -> str:
    return reverse("transcripts:verify", kwargs={"session_id": session_id})


def stored_segments(session_id: str) -> list[bytes]:
    storage = transcript_storage()
    segments = Segment.objects.filter(session__external_id=session_id).order_by("number")
    return [storage.open(s.path, "rb").read() for s in segments]


@pytest.mark.django_db
@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_line_separators_in_content_and_metadata_keep_the_session_readable(
    owner: APIClient, char: str
) -> None:
    events = [
        {"role": "user", "content": f"a{char}b"},
        {"role": "assistant", "content": "ok", "metadata": {f"k{char}": [f"v{char}"]}},
    ]
    assert append(owner, "ls1", events, user_id="u_ls").status_code == 201

    replay = owner.get(events_url("ls1"))
    assert replay.status_code == 200
    got = replay.json()["events"]
    assert [e["content"] for e in got] == [f"a{char}b", "ok"]
    assert got[1]["metadata"] == {f"k{char}": [f"v{char}"]}
    assert owner.get(verify_url("ls1")).json()["ok"] is True
    compress = owner.post(
        reverse("memories:compress", kwargs={"session_id": "ls1"}),
        {"budget_tokens": 500},
        format="json",
    )
    assert compress.status_code == 200
    export = owner.get(reverse("memories:export", kwargs={"user_id": "u_ls"}))
    assert export.status_code == 200
    # stored escaped: one header and one line per event, whatever splits lines
    (data,) = stored_segments("ls1")
    assert char.encode() not in data
    assert len(data.decode().splitlines()) == 3


@pytest.mark.django_db
def test_segments_written_with_raw_line_separators_still_read_and_verify(
    owner: APIClient, monkeypatch
) -> None:
    from transcripts import segments

    # given a segment written the old way: U+2028 and friends raw inside JSON strings
    batch = [
        {"id": "m-1", "role": "user", "content": f"one{LINE_BREAKS}two"},
        {"id": "m-2", "role": "assistant", "content": "x", "metadata": {"\u2029": "\x85"}},
    ]
    with monkeypatch.context() as patch:
        patch.setattr(segments, "_line", segments._dumps)
        assert append(owner, "old", batch).status_code == 201
    (old,) = stored_segments("old")
    assert "\u2028".encode() in old and "\x85".encode() in old

    # when it is read back next to a new segment
    assert append(owner, "old", [{"role": "user", "content": "new\u2028one"}]).status_code == 201

    # then replay gives the events exactly, the chain verifies and a retry is recognised
    replay = owner.get(events_url("old")).json()["events"]
    assert [e["content"] for e in replay] == [f"one{LINE_BREAKS}two", "x", "new\u2028one"]
    assert replay[1]["metadata"] == {"\u2029": "\x85"}
    assert owner.get(verify_url("old")).json() == {
        "session_id": "old",
        "ok": True,
        "segments_checked": 2,
        "events_checked": 3,
        "problems": [],
    }
    before = layer0_counts()
    retry = append(owner, "old", batch)
    assert retry.status_code == 200
    assert [e["id"] for e in retry.json()["events"]] == ["m-1", "m-2"]
    assert layer0_counts() == before


# Everything the API accepts: any Unicode scalar but NUL (surrogates cannot be sent alone),
# line breaks often; numbers within the 64-bit range; nesting well inside the depth limit.
ACCEPTED_CHARS = st.one_of(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    st.sampled_from(LINE_BREAKS),
)
ACCEPTED_TEXT = st.text(alphabet=ACCEPTED_CHARS, max_size=40)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-9.2e18, max_value=9.2e18)
    | ACCEPTED_TEXT,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(ACCEPTED_TEXT, children, max_size=4)
    ),
    max_leaves=12,
)
EVENTS = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "system"]),
            "content": st.text(alphabet=ACCEPTED_CHARS, max_size=300),
            "metadata": st.dictionaries(ACCEPTED_TEXT, JSON_VALUES, max_size=4),
        }
    ),
    min_size=1,
    max_size=3,
)


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@pytest.mark.django_db
@hypothesis_settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(EVENTS, min_size=1, max_size=2))
def test_any_accepted_text_and_metadata_replay_exactly_and_verify(
    owner: APIClient, batches
) -> None:
    session_id = f"p-{uuid.uuid4().hex[:12]}"
    for events in batches:
        response = append(owner, session_id, events)
        assert response.status_code == 201, response.json()

    replay = owner.get(events_url(session_id), {"limit": 1000})
    assert replay.status_code == 200
    got = replay.json()["events"]
    sent = [event for events in batches for event in events]
    assert [(e["role"], e["content"]) for e in got] == [(e["role"], e["content"]) for e in sent]
    assert [e["content"].encode() for e in got] == [e["content"].encode() for e in sent]
    assert [canonical(e["metadata"]) for e in got] == [canonical(e["metadata"]) for e in sent]
    report = owner.get(verify_url(session_id)).json()
    assert report["ok"] is True, report["problems"]
    assert report["events_checked"] == len(sent)


@pytest.mark.django_db
def test_replaying_an_erased_session_is_410(owner: APIClient) -> None:
    assert append(owner, "gone-1", [{"role": "user", "content": "x"}]).status_code == 201
    session_erase(session=Session.objects.get(external_id="gone-1"), request_id="del_test")
    before = layer0_counts()

    response = owner.get(events_url("gone-1"))

    assert response.status_code == 410
    assert response.json()["error"]["code"] == "gone"
    assert owner.get(verify_url("gone-1")).json()["ok"] is True  # tombstones still verify
    page = events_after(session=Session.objects.get(external_id="gone-1"))
    assert (page.events, page.has_more) == ([], False)
    assert layer0_counts() == before


@pytest.fixture
def full_disk(settings):
    real = settings.STORAGES
    settings.STORAGES = {
        **real,
        "transcripts": {**real["transcripts"], "BACKEND": "tests.storages.FullDiskStorage"},
    }
    yield
    settings.STORAGES = real


@pytest.mark.django_db
def test_an_append_refused_by_a_full_disk_leaves_no_empty_segment_file(
    owner: APIClient, tenant, full_disk
) -> None:
    response = append(owner, "s-full", [{"role": "user", "content": "hello"}])

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "store_unavailable"
    root = Path(transcript_storage().location) / str(tenant.pk)  # type: ignore[attr-defined]
    assert not [p for p in root.rglob("*") if p.is_file()]


@pytest.mark.django_db
def test_verify_transcripts_reports_and_removes_old_orphan_objects(
    owner: APIClient, tenant, capsys
) -> None:
    import os
    import time

    from django.core.management import call_command

    append(owner, "s-1", [{"role": "user", "content": "a"}])
    segment = Segment.objects.get(session__external_id="s-1")
    folder = Path(transcript_storage().path(segment.path)).parent
    # an empty object a full disk left an hour ago, and one an append in flight just wrote
    empty = folder / "00000002-0badf00d.jsonl"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 3600, time.time() - 3600))
    in_flight = folder / "00000002-5ca1ab1e.jsonl"
    in_flight.write_bytes(b'{"header": {}}\n')

    call_command("verify_transcripts", "--tenant", tenant.slug)
    report = capsys.readouterr().out
    assert "0 broken" in report
    assert f"ORPHAN {tenant.pk}/{segment.session_id}/00000002-0badf00d.jsonl (0 bytes, empty" in (
        report
    )
    assert "00000002-5ca1ab1e.jsonl (15 bytes," in report
    assert "2 orphan object(s); --remove-orphans deletes the 1 older" in report
    assert empty.exists()  # reporting removes nothing

    call_command("verify_transcripts", "--tenant", tenant.slug, "--remove-orphans")
    assert "2 orphan object(s), 1 removed" in capsys.readouterr().out
    assert not empty.exists() and in_flight.exists()
    assert Path(transcript_storage().path(segment.path)).exists()  # segments are never orphans
    call_command("verify_transcripts", "--session", "s-1")
    assert "1 orphan object(s)" in capsys.readouterr().out


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["0.0", "1e3", "-1", " ", "2.5"])
def test_an_integer_query_parameter_takes_digits_only(owner, value: str) -> None:
    url = reverse("transcripts:events", kwargs={"session_id": "s-digits"})
    appended = owner.post(
        url, {"user_id": "u_1", "events": [{"role": "user", "content": "hi"}]}, format="json"
    )
    assert appended.status_code == 201

    for name in ("after", "limit"):
        response = owner.get(url, {name: value})
        assert response.status_code == 400, (name, value, response.json())
        assert name in response.json()["error"]["fields"]
    assert owner.get(url, {"after": "0", "limit": "5"}).status_code == 200
