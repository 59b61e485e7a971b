from __future__ import annotations

import itertools
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.stm.items import Status, StmItem
from memories.stm.store import stm_store
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
from memoryproject.redis_keys import Owner

_owner_ids = itertools.count(1)


def new_owner() -> Owner:
    """A fresh owner per test (ids far above real rows; keys live under this run's prefix)."""
    return Owner(tenant_id=900_000, end_user_id=next(_owner_ids) + int(time.time() * 1000) % 10**6)


def make_item(owner: Owner, **fields) -> StmItem:
    now = fields.pop("now", time.time())
    values = {
        "id": f"stm_{owner.end_user_id}_{uuid.uuid4().hex[:16]}",
        "tenant_id": owner.tenant_id,
        "end_user_id": owner.end_user_id,
        "user_id": "u_42",
        "session_id": "s_1",
        "task_id": "bug_456",
        "memory_type": "fact",
        "summary": "createOrder 在 prod-k8s 超时，数据库已排除",
        "fingerprint": "fp-db-excluded",
        "created_at": now,
        "updated_at": now,
        "last_access_at": now,
        "expires_at": now + 600,
        "source": {"kind": "user", "message_ids": ["msg_1"], "tool_call_ids": []},
        "entities": ["createOrder", "prod-k8s"],
        "sessions": ["s_1"],
    }
    values.update(fields)
    values.setdefault("fingerprints", [values["fingerprint"]])
    return StmItem(**values)


def test_every_field_round_trips() -> None:
    owner = new_owner()
    now = time.time()
    item = make_item(
        owner,
        subtype="diagnosis",
        detail={"symptom": "timeout", "excluded_root_causes": ["database"], "n": 1.5},
        entities=["createOrder", "payment-service", "数据库"],
        tags=["timeout", "diagnosis"],
        source={
            "kind": "conversation+tool",
            "message_ids": ["m91", "m94"],
            "tool_call_ids": ["t18"],
        },
        confidence=0.92,
        importance=0.84,
        created_at=now,
        updated_at=now,
        last_access_at=now,
        expires_at=now + 3600,
        canonical_fact_key="bug456:createOrder:db_excluded",
        fact_value="excluded",
        verified=True,
        remember=True,
    )

    (result,) = stm_store().upsert(items=[item], now=now)
    stored = stm_store().get(owner=owner, item_id=item.id)

    assert result.outcome == "inserted"
    assert stored == item
    assert stm_store().index_problems(owner) == []


def test_same_fact_merges_new_evidence_and_refreshes_ttl() -> None:
    owner = new_owner()
    now = time.time()
    first = make_item(owner, now=now, tags=["a"], confidence=0.6, importance=0.9)
    later = make_item(
        owner,
        now=now + 5,
        session_id="s_2",
        sessions=["s_2"],
        entities=["payment-service"],
        tags=["b"],
        source={"kind": "tool", "message_ids": ["msg_2"], "tool_call_ids": ["call_1"]},
        confidence=0.9,
        importance=0.5,
        expires_at=now + 5 + 1200,
    )
    store = stm_store()
    store.upsert(items=[first], now=now)

    (result,) = store.upsert(items=[later], now=now + 5)
    merged = store.get(owner=owner, item_id=first.id)

    assert (result.outcome, result.item_id, result.version) == ("merged", first.id, 2)
    assert merged is not None
    assert merged.version == 2 and merged.hit_count == 2
    assert merged.sessions == ["s_1", "s_2"]
    assert merged.entities == ["createOrder", "prod-k8s", "payment-service"]
    assert merged.tags == ["a", "b"]
    assert merged.source == {
        "kind": "user+tool",
        "message_ids": ["msg_1", "msg_2"],
        "tool_call_ids": ["call_1"],
    }
    assert (merged.confidence, merged.importance) == (0.9, 0.9)
    assert merged.expires_at == later.expires_at
    assert merged.updated_at == later.updated_at
    assert store.get(owner=owner, item_id=later.id) is None
    assert stm_store().index_problems(owner) == []


def test_same_evidence_again_changes_nothing() -> None:
    owner = new_owner()
    now = time.time()
    store = stm_store()
    store.upsert(items=[make_item(owner, now=now)], now=now)
    (again,) = store.upsert(items=[make_item(owner, now=now + 1)], now=now + 1)
    assert (again.outcome, again.version) == ("unchanged", 1)


def test_contradicting_value_supersedes_and_points_back() -> None:
    owner = new_owner()
    now = time.time()
    store = stm_store()
    old = make_item(owner, now=now, canonical_fact_key="bug456:root_cause", fact_value="database")
    new = make_item(
        owner,
        now=now + 1,
        fingerprint="fp-pool",
        canonical_fact_key="bug456:root_cause",
        fact_value="thread_pool",
        source={"kind": "user", "message_ids": ["msg_9"], "tool_call_ids": []},
    )
    store.upsert(items=[old], now=now)

    (result,) = store.upsert(items=[new], now=now + 1)

    assert (result.outcome, result.item_id, result.superseded_id) == ("superseded", new.id, old.id)
    before = store.get(owner=owner, item_id=old.id)
    after = store.get(owner=owner, item_id=new.id)
    assert before is not None and after is not None
    assert (before.status, before.superseded_by) == (Status.SUPERSEDED, new.id)
    assert (after.status, after.supersedes) == (Status.ACTIVE, old.id)
    recent = [i for i, _ in store.ids_by_index(owner=owner)]
    assert recent == [new.id]
    assert stm_store().index_problems(owner) == []


def test_hundred_concurrent_upserts_of_one_fact_leave_one_item_at_version_100() -> None:
    owner = new_owner()
    store = stm_store()

    def upsert(n: int) -> str:
        item = make_item(
            owner, source={"kind": "user", "message_ids": [f"m{n}"], "tool_call_ids": []}
        )
        return store.upsert(items=[item], now=time.time())[0].outcome

    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(pool.map(upsert, range(100)))

    assert outcomes.count("inserted") == 1 and outcomes.count("merged") == 99
    (item_id,) = [i for i, _ in store.ids_by_index(owner=owner)]
    item = store.get(owner=owner, item_id=item_id)
    assert item is not None and item.status == Status.ACTIVE
    assert item.version == 100 and item.hit_count == 100
    assert len(item.source["message_ids"]) == 100
    assert stm_store().index_problems(owner) == []


def test_expiry_removes_items_and_every_index_entry() -> None:
    owner = new_owner()
    now = time.time()
    store = stm_store()
    short = make_item(owner, now=now, fingerprint="a", expires_at=now + 1, canonical_fact_key="k")
    long = make_item(owner, now=now, fingerprint="b", expires_at=now + 600, task_id="other")
    store.upsert(items=[short, long], now=now)

    removed, more = store.sweep_owner(owner=owner, now=now + 2, limit=100)

    assert (removed, more) == (1, False)
    assert store.get(owner=owner, item_id=short.id) is None
    assert [i for i, _ in store.ids_by_index(owner=owner, index="task", value="bug_456")] == []
    assert redis_connection().hget(f"{keys.stm_base(owner)}:ck", "k") is None
    assert stm_store().index_problems(owner) == []
    # the registry still knows when this user's next item falls due
    assert redis_connection().zscore(keys.stm_expiring(), owner.tag) == long.expires_at


def test_delete_removes_the_item_and_every_index_entry() -> None:
    owner = new_owner()
    item = make_item(owner)
    store = stm_store()
    store.upsert(items=[item], now=time.time())

    assert store.delete(owner=owner, item_id=item.id) is True
    assert store.delete(owner=owner, item_id=item.id) is False
    leftovers = list(redis_connection().scan_iter(match=f"{keys.stm_base(owner)}:*"))
    assert leftovers == []


FACTS = st.sampled_from(["db", "pool", "cache", "dns"])
OPERATION = st.one_of(
    st.tuples(
        st.just("upsert"), FACTS, st.sampled_from(["", "root"]), st.sampled_from(["s1", "s2"])
    ),
    st.tuples(st.just("expire"), st.integers(0, 30)),
    st.tuples(st.just("delete"), st.integers(0, 10)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=st.lists(OPERATION, min_size=1, max_size=25))
def test_indexes_always_agree_with_items(operations) -> None:
    owner = new_owner()
    store = stm_store()
    clock = time.time()
    created: list[str] = []
    for step, operation in enumerate(operations):
        clock += 1
        if operation[0] == "upsert":
            _, fact, key, session = operation
            item = make_item(
                owner,
                now=clock,
                fingerprint=f"fp-{fact}",
                canonical_fact_key=key,
                fact_value=fact if key else "",
                session_id=session,
                sessions=[session],
                entities=[fact.upper(), "shared"],
                expires_at=clock + 5 + step % 7,
                source={"kind": "user", "message_ids": [f"m{step}"], "tool_call_ids": []},
            )
            created.append(store.upsert(items=[item], now=clock)[0].item_id)
        elif operation[0] == "expire":
            store.sweep_owner(owner=owner, now=clock + operation[1], limit=1000)
        elif created:
            store.delete(owner=owner, item_id=created[operation[1] % len(created)])
        assert stm_store().index_problems(owner) == [], operations[: step + 1]


def test_upserts_survive_redis_forgetting_its_scripts() -> None:
    owner = new_owner()
    redis_connection().script_flush()  # what a Redis restart does to the script cache

    (result,) = stm_store().upsert(items=[make_item(owner)], now=time.time())

    assert result.outcome == "inserted"
