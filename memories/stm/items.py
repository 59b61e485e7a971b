"""The short-term memory item: one Redis Hash per item, structured fields JSON-encoded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from memoryproject.redis_keys import Owner


def _encode_json(value: Any) -> str:
    return orjson.dumps(value).decode()


class MemoryType:
    FACT = "fact"
    DECISION = "decision"
    HYPOTHESIS = "hypothesis"
    OBSERVATION = "observation"
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    ALL = (FACT, DECISION, HYPOTHESIS, OBSERVATION, CONSTRAINT, PREFERENCE)


class Status:
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DELETED = "deleted"


# Whose words are the working memory of the task they were seen in (or, without a task, of the
# session): what a tool returned and what the assistant stated. Only the user's words, and what
# a reviewer accepted, reach beyond it.
WORKING_SOURCES = frozenset({"tool", "assistant"})


class Trust:
    """How far an item is the user's own word: only a trusted one may become a rule."""

    TRUSTED = "trusted"  # the user said it, a reviewer approved it, or a trusted key wrote it
    UNTRUSTED = "untrusted"  # an assistant, a tool, an agent's proposal, a model or an import
    ALL = (TRUSTED, UNTRUSTED)


# Source kinds that are the user's word whoever else repeated it (a merged item's kind joins
# its sources with "+"), strongest first: what `source_kind` names.
TRUSTED_SOURCES = ("reviewer", "user")
SOURCE_RANK = ("reviewer", "user", "import", "tool", "proposal", "llm", "assistant")


def primary_source_kind(kind: str) -> str:
    """The strongest of the kinds a merged item joins ("user+proposal" is the user's)."""
    kinds = [k for k in kind.split("+") if k]
    if not kinds:
        return ""
    return min(kinds, key=lambda k: SOURCE_RANK.index(k) if k in SOURCE_RANK else len(SOURCE_RANK))


JSON_FIELDS = ("detail", "entities", "tags", "source", "sessions", "fingerprints")
FLOAT_FIELDS = (
    "confidence",
    "importance",
    "created_at",
    "updated_at",
    "last_access_at",
    "expires_at",
)
INT_FIELDS = ("tenant_id", "end_user_id", "version", "hit_count", "recall_count")
BOOL_FIELDS = ("verified", "remember")
LIST_FIELDS = ("entities", "tags", "sessions", "fingerprints")


@dataclass
class StmItem:
    """Every field of the design's memory item, plus what merging and promotion need."""

    id: str
    tenant_id: int
    end_user_id: int
    user_id: str
    session_id: str
    memory_type: str
    summary: str
    fingerprint: str
    task_id: str = ""
    subtype: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    # {"kind": ..., "message_ids": [...], "tool_call_ids": [...]}
    source: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.5
    importance: float = 0.5
    created_at: float = 0.0
    updated_at: float = 0.0
    last_access_at: float = 0.0
    expires_at: float = 0.0
    canonical_fact_key: str = ""
    fact_value: str = ""
    version: int = 1
    status: str = Status.ACTIVE
    hit_count: int = 1  # times the fact was written again and merged
    recall_count: int = 0  # times recall injected it
    sessions: list[str] = field(default_factory=list)  # every session the fact was seen in
    fingerprints: list[str] = field(default_factory=list)  # every fingerprint merged into it
    supersedes: str = ""
    superseded_by: str = ""
    verified: bool = False
    remember: bool = False
    # Trust as the write policy set it; items written before it was recorded get the trust
    # their source kind implies.
    trust: str = ""

    def __post_init__(self) -> None:
        if not self.trust:
            kinds = str(self.source.get("kind") or "").split("+")
            trusted = any(k in TRUSTED_SOURCES for k in kinds)
            self.trust = Trust.TRUSTED if trusted else Trust.UNTRUSTED

    @property
    def source_kind(self) -> str:
        return primary_source_kind(str(self.source.get("kind") or ""))

    @property
    def is_trusted(self) -> bool:
        return self.trust == Trust.TRUSTED

    @property
    def owner(self) -> Owner:
        return Owner(self.tenant_id, self.end_user_id)

    @property
    def message_ids(self) -> list[str]:
        return list(self.source.get("message_ids", []))

    def to_redis(self) -> dict[str, str]:
        """Flat string fields for HSET; JSON for structured values."""
        raw: dict[str, str] = {}
        # Field kinds are looked up once per class, not per call: this runs for every upsert.
        for name, kind in FIELD_KINDS:
            value = getattr(self, name)
            if kind == "json":
                raw[name] = _encode_json(value)
            elif kind == "bool":
                raw[name] = "1" if value else "0"
            elif kind == "float":
                raw[name] = repr(float(value))
            else:
                raw[name] = str(value)
        return raw

    @classmethod
    def from_redis(cls, raw: dict[bytes | str, bytes | str]) -> StmItem:
        values: dict[str, Any] = {}
        for key, value in raw.items():
            field_decoder = _DECODERS.get(key)
            if field_decoder is None:
                continue  # a field this version does not know
            name, decode = field_decoder
            values[name] = decode(value.decode() if isinstance(value, bytes) else value)
        return cls(**values)

    def is_live(self, now: float) -> bool:
        """Active and not yet expired: what reads may return."""
        return self.status == Status.ACTIVE and self.expires_at > now

    @property
    def is_working_memory(self) -> bool:
        """A tool's result or the assistant's statement: state of its task, not the user's."""
        return self.source.get("kind") in WORKING_SOURCES

    def in_scope(self, *, task_id: str, session_id: str) -> bool:
        """Whether a recall in this task and session may see the item: working memory only
        within its own task (or, made without one, its own session); anything else always."""
        if not self.is_working_memory:
            return True
        if self.task_id:
            return self.task_id == task_id
        return session_id == self.session_id or session_id in self.sessions


def _kind(name: str) -> str:
    if name in JSON_FIELDS:
        return "json"
    if name in BOOL_FIELDS:
        return "bool"
    return "float" if name in FLOAT_FIELDS else "text"


FIELD_KINDS = tuple((f.name, _kind(f.name)) for f in fields(StmItem))


def _json_value(name: str) -> Callable[[str], Any]:
    def decode(text: str) -> Any:
        decoded = orjson.loads(text) if text else None
        # Lua's cjson writes an empty table as {}; list fields read it back as [].
        if name in LIST_FIELDS and not decoded:
            return []
        if name == "source" and isinstance(decoded, dict):
            for ids in ("message_ids", "tool_call_ids"):
                decoded[ids] = list(decoded.get(ids) or [])
        return decoded if decoded is not None else {}

    return decode


def _decoder(name: str) -> Callable[[str], Any]:
    if name in JSON_FIELDS:
        return _json_value(name)
    if name in FLOAT_FIELDS:
        return float
    if name in INT_FIELDS:
        return lambda text: int(float(text))
    if name in BOOL_FIELDS:
        return lambda text: text in ("1", "true")
    return str


# Every short-term read decodes a hundred hashes of some thirty fields each: the decoder of a
# field is found by its name as Redis returns it (bytes), or as a str from a decoding client.
_DECODERS: dict[bytes | str, tuple[str, Callable[[str], Any]]] = {
    key: (f.name, _decoder(f.name)) for f in fields(StmItem) for key in (f.name, f.name.encode())
}
