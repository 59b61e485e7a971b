"""Extractors turn transcript events into candidate memory items for the write policy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from memories.stm.items import MemoryType
from memories.vocabulary import INJECTION_CUE_KIND, Vocabulary
from memories.write.candidates import Candidate, SourceKind
from memories.write.meaning import NOTHING, sentence_kinds
from memories.write.statements import (
    KIND_CONFIDENCE,
    MIN_MEANING_WEIGHT,
    NOTHING_FOUND,
    REMEMBERED_CONFIDENCE,
    Kind,
    Reading,
    keyed_value,
    read_clauses,
    sentences_with_ends,
    weight_of,
    without_leads,
)
from memories.write.tool_output import read_figures, signal_region, tool_name

MAX_SENTENCE_CHARS = 300
MAX_TOOL_SUMMARY_CHARS = 200
MAX_REMEMBERED_CHARS = 300
MAX_TOOL_ITEMS = 5
MAX_TOOL_ENTITIES = 8
MAX_SUMMARY_ENTITIES = 3
MAX_SYNONYMS = 2  # other spellings an observation carries beyond its entities
# Below this weight (two per Latin word, one per CJK character) what is left of a
# "remember" message once its remember phrase is removed is taken as filler, not content.
BARE_REMEMBER_WEIGHT = 4
# ...unless it opens as a first-hand statement of a subject and one more word ("I'm vegan").
MIN_FIRST_HAND_WEIGHT = 3
MIN_ERROR_STATUS = 400


@dataclass(frozen=True)
class ExtractionContext:
    """Who and what the events belong to, and the tenant's vocabulary."""

    user_id: str
    session_id: str
    task_id: str
    vocabulary: Vocabulary

    @property
    def scope(self) -> str:
        return self.task_id or self.session_id


class Extractor(Protocol):
    """Anything that proposes candidates from a run of transcript events."""

    def extract(
        self, *, events: Sequence[Mapping[str, Any]], context: ExtractionContext
    ) -> list[Candidate]: ...


@dataclass(frozen=True)
class _Kind:
    """How a matched vocabulary kind becomes a candidate."""

    name: str
    memory_type: str
    subtype: str
    confidence: float
    importance: float


KINDS = {
    kind.name: kind
    for kind in (
        _Kind(Kind.EXCLUSION, MemoryType.FACT, "exclusion", KIND_CONFIDENCE[Kind.EXCLUSION], 0.7),
        _Kind(
            Kind.CONCLUSION,
            MemoryType.FACT,
            "conclusion",
            KIND_CONFIDENCE[Kind.CONCLUSION],
            0.7,
        ),
        _Kind(
            Kind.CONSTRAINT,
            MemoryType.CONSTRAINT,
            "user_constraint",
            KIND_CONFIDENCE[Kind.CONSTRAINT],
            0.8,
        ),
        _Kind(Kind.DECISION, MemoryType.DECISION, "decision", KIND_CONFIDENCE[Kind.DECISION], 0.7),
        _Kind(
            Kind.PREFERENCE,
            MemoryType.PREFERENCE,
            "user_preference",
            KIND_CONFIDENCE[Kind.PREFERENCE],
            0.6,
        ),
        _Kind(Kind.FACT, MemoryType.FACT, "stated", KIND_CONFIDENCE[Kind.FACT], 0.5),
    )
}
HEDGED_CONFIDENCE = 0.5
ASSISTANT_CONFIDENCE = 0.6
# What a tool printed is what it measured, though only at that moment.
TOOL_CONFIDENCE = 0.9
# Kinds that are the task's working memory: they carry the other spellings of what they name.
WORKING_KINDS = frozenset({Kind.EXCLUSION, Kind.CONCLUSION})
REMEMBER_IMPORTANCE = 0.9
EXCLUDED_VALUE = "excluded"
# What the statement probe may read a fact of the word lists as instead.
RE_KINDABLE = frozenset({Kind.PREFERENCE, Kind.DECISION})


@dataclass
class _Turn:
    """A user or assistant message already read, for a later bare "remember this"."""

    event: Mapping[str, Any]
    text: str
    candidate_indexes: list[int]


class RuleExtractor:
    """Proposes candidates from transcript events with the tenant's word lists and patterns."""

    def extract(
        self, *, events: Sequence[Mapping[str, Any]], context: ExtractionContext
    ) -> list[Candidate]:
        """Candidates for `events`, in transcript order."""
        candidates: list[Candidate] = []
        turns: list[_Turn] = []
        for event in _in_order(events):
            role = event.get("role")
            if role == "user":
                self._user(event, context, candidates, turns)
            elif role == "assistant":
                found, _ = self._sentences(event, context, by_user=False)
                turns.append(_Turn(event, _text(event.get("content")), _append(candidates, found)))
            elif role == "tool":
                observation = self._tool(event, context)
                if observation is not None:
                    candidates.append(observation)
        return candidates

    def _user(
        self,
        event: Mapping[str, Any],
        context: ExtractionContext,
        candidates: list[Candidate],
        turns: list[_Turn],
    ) -> None:
        vocabulary = context.vocabulary
        text = _text(event.get("content"))
        if not text.strip() or vocabulary.matches("chitchat", text.strip()):
            return
        found, bare_request = self._sentences(event, context, by_user=True)
        if not bare_request:
            turns.append(_Turn(event, text, _append(candidates, found)))
            return
        if found:
            # "Remember this." beside statements asks to remember the message's statements.
            found = [_remembered(candidate, phrase=bare_request) for candidate in found]
            turns.append(_Turn(event, text, _append(candidates, found)))
            return
        # A bare "remember this" points back: to the nearest message that gave candidates,
        # or to the nearest user message if that comes first.
        for turn in reversed(turns):
            if turn.candidate_indexes:
                for index in turn.candidate_indexes:
                    candidates[index] = _remembered(candidates[index], event, bare_request)
                return
            if turn.event.get("role") == "user":
                candidates.append(
                    _remembered_fact(turn.event, turn.text, event, context, phrase=bare_request)
                )
                turns.append(_Turn(event, text, [len(candidates) - 1]))
                return

    def _sentences(
        self, event: Mapping[str, Any], context: ExtractionContext, *, by_user: bool
    ) -> tuple[list[Candidate], str]:
        """One candidate at most per clause of a conversational message, and the message's
        bare request to remember (one that names nothing itself) as said, or ''."""
        vocabulary = context.vocabulary
        read: list[tuple[str, Reading]] = []
        for sentence, end in split_sentences_with_ends(_text(event.get("content"))):
            read += read_clauses(sentence, vocabulary, end=end, by_user=by_user)
        # A message that speaks to the model or its instructions (an `injection_cue`: it passed
        # the quarantine's screen, but is no ordinary statement) is read by the word lists alone.
        if by_user and not vocabulary.matches(INJECTION_CUE_KIND, _text(event.get("content"))):
            read = _read_by_meaning(read, vocabulary)
        found = []
        bare_request = ""
        for clause, reading in read:
            if reading.kind:
                found.append(_sentence_candidate(clause, reading, event, context))
            elif reading.remember and _is_bare_remember(reading.text, vocabulary):
                bare_request = bare_request or reading.request or clause
            elif reading.remember and not _is_filler(reading.text, vocabulary):
                found.append(_remembered_fact(event, clause, event, context, reading))
        return found, bare_request

    def _tool(self, event: Mapping[str, Any], context: ExtractionContext) -> Candidate | None:
        """One short observation from a tool result, never its raw output: the errors, HTTP
        statuses and timeouts it reports, the figures it reads (metric and value), and the
        entities they concern. A result with none of them proposes nothing."""
        vocabulary = context.vocabulary
        output = _text(event.get("content"))
        errors = vocabulary.findall("error_name", output)[:MAX_TOOL_ITEMS]
        status_codes = [
            code
            for code in vocabulary.findall("status_code", output)
            if code.isdigit() and int(code) >= MIN_ERROR_STATUS
        ][:MAX_TOOL_ITEMS]
        timeout = vocabulary.matches("timeout", output)
        region, core = signal_region(output, vocabulary)
        figures = read_figures(core, vocabulary)
        if not (errors or status_codes or timeout or figures):
            return None
        # The names on the signal lines first: the lines around them may name other things.
        on_signal_lines = vocabulary.find_entities(core)
        entities = _unique_names([*on_signal_lines, *vocabulary.find_entities(region)])
        entities = entities[:MAX_TOOL_ENTITIES]
        tool = tool_name(event)
        tool_call_id = str(event.get("tool_call_id") or "")
        signals = [*errors, *(f"HTTP {code}" for code in status_codes)]
        if timeout:
            signals.append("timeout")
        known_errors = {error.lower() for error in errors}
        named = [entity for entity in entities if entity.lower() not in known_errors]
        label = f"tool {tool or tool_call_id}".rstrip()
        key = f"{context.scope}:observation:{tool_call_id}" if tool_call_id else ""
        fact_value = ""
        if figures:
            # What the figures are about, then who read them: "billing-api (psql_stats): …".
            read = " ".join(figure.name.lower() for figure in figures)
            core_names = {entity.lower() for entity in on_signal_lines}
            about = [e for e in named if e.lower() in core_names and e.lower() not in read]
            about = about[:MAX_SUMMARY_ENTITIES]
            head = f"{', '.join(about)} ({tool or label})" if about else tool or label
            summary = f"{head}: " + ", ".join(figure.text for figure in figures)
            summary += "; " + ", ".join(signals) if signals else ""
            if tool and about:
                # A newer reading of the same tool about the same thing replaces the older.
                key = f"{context.scope}:observation:{tool}:{about[0]}".lower()
                fact_value = _clip(summary, MAX_TOOL_SUMMARY_CHARS)
        else:
            summary = f"{label}: " + ", ".join(signals)
            summary += " — " + ", ".join(named) if named else ""
        # Pool figures concern the connection pool, in either language ("连接池").
        names = [*entities, *(figure.name for figure in figures)]
        carried = _unique_names([*entities, *vocabulary.synonyms(names)])
        detail: dict[str, Any] = {
            "errors": errors,
            "status_codes": status_codes,
            "timeout": timeout,
            "entities": entities,
        }
        if tool:
            detail["tool"] = tool
        if figures:
            detail["figures"] = [figure.as_dict() for figure in figures]
        if event.get("created_at"):
            detail["observed_at"] = str(event["created_at"])
        tags = [MemoryType.OBSERVATION]
        if figures:
            tags.append("figures")
        if errors or status_codes:
            tags.append("error")
        if timeout:
            tags.append("timeout")
        return Candidate(
            user_id=context.user_id,
            session_id=context.session_id,
            task_id=context.task_id,
            memory_type=MemoryType.OBSERVATION,
            subtype="tool_result",
            summary=_clip(summary, MAX_TOOL_SUMMARY_CHARS),
            detail=detail,
            entities=tuple(carried[: MAX_TOOL_ENTITIES + MAX_SYNONYMS]),
            tags=tuple(tags),
            source_kind=SourceKind.TOOL,
            message_ids=_ids(event.get("id")),
            tool_call_ids=_ids(tool_call_id),
            confidence=TOOL_CONFIDENCE,
            importance=0.6 if signals else 0.5,
            canonical_fact_key=key,
            fact_value=fact_value,
            verified=True,
        )


def _read_by_meaning(
    read: list[tuple[str, Reading]], vocabulary: Vocabulary
) -> list[tuple[str, Reading]]:
    """The readings with the user's clauses read by meaning too (the statement probe,
    `meaning.py`): one no word list read (and that says enough) states what the probe reads;
    an unkeyed fact the probe reads as a preference or a decision ("I'd rather see metric
    units", "We're going with Stripe") is one."""
    chosen = [
        index
        for index, (_, reading) in enumerate(read)
        if _unread(reading, vocabulary) or (reading.kind == Kind.FACT and not reading.key)
    ]
    if not chosen:
        return read
    kinds = sentence_kinds([read[index][1].text for index in chosen])
    read = list(read)
    for index, (kind, probability) in zip(chosen, kinds, strict=True):
        clause, reading = read[index]
        if kind == NOTHING or kind == reading.kind:
            continue
        if reading.kind and kind not in RE_KINDABLE:
            continue
        if kind == Kind.CONSTRAINT and _not_for_the_assistant(reading.text, vocabulary):
            continue
        if kind == Kind.FACT and vocabulary.matches(
            "not_fact", without_leads(reading.text, vocabulary)
        ):
            continue  # an opinion or a feeling is no fact (a liking may still be a preference)
        key, value = keyed_value(reading.text, vocabulary)
        if key.startswith("preference.") != (kind == Kind.PREFERENCE):
            key, value = "", ""
        why = f"reads as a {kind} by meaning ({probability:.2f})"
        read[index] = (clause, replace(reading, kind=kind, reason=why, key=key, value=value))
    return read


def _not_for_the_assistant(text: str, vocabulary: Vocabulary) -> bool:
    """Whether an imperative is advice to the person spoken to, or no instruction at all, as
    the word lists read it ("Never sign a lease without seeing the place first")."""
    stripped = without_leads(text, vocabulary)
    return any(
        vocabulary.matches(kind, part)
        for kind in ("advice", "not_instruction")
        for part in (text, stripped)
    )


def _unread(reading: Reading, vocabulary: Vocabulary) -> bool:
    """Whether no word list read the clause, though it says enough to state something."""
    return (
        not reading.kind
        and reading.reason == NOTHING_FOUND
        and not reading.remember
        and weight_of(reading.text) >= MIN_MEANING_WEIGHT
    )


def split_sentences(text: str) -> list[str]:
    """Non-empty sentences of `text`, each at most MAX_SENTENCE_CHARS long."""
    return [sentence for sentence, _ in split_sentences_with_ends(text)]


def split_sentences_with_ends(text: str) -> list[tuple[str, str]]:
    """Sentences of `text` with the punctuation that ended each (`?` marks a question)."""
    # A longer "sentence" is pasted material (a log, a file), not something the user said.
    return [(s, end) for s, end in sentences_with_ends(text) if len(s) <= MAX_SENTENCE_CHARS]


def _sentence_candidate(
    sentence: str,
    reading: Reading,
    event: Mapping[str, Any],
    context: ExtractionContext,
) -> Candidate:
    kind = KINDS[reading.kind]
    entities = context.vocabulary.find_entities(sentence)
    if kind.name in WORKING_KINDS:
        # "已排除数据库" is found by "is the database ruled out?" too.
        entities = _unique_names([*entities, *context.vocabulary.synonyms_in(sentence)])
    by_user = event.get("role") == "user"
    if not by_user:
        confidence = ASSISTANT_CONFIDENCE
    elif reading.hedged:
        confidence = HEDGED_CONFIDENCE
    else:
        confidence = kind.confidence
    canonical_key = reading.key
    fact_value = reading.value if reading.key else ""
    if kind.name == Kind.EXCLUSION:
        fact_value = EXCLUDED_VALUE
        if entities:
            canonical_key = f"{context.scope}:excluded:{entities[0]}".lower()
    # What is remembered reads as the statement ("I deploy with Terraform"); the sentence
    # as said and its remember request stay in the detail.
    summary = reading.text if reading.request and reading.text else sentence
    detail: dict[str, Any] = {"text": sentence, "kind": kind.name, "reason": reading.reason}
    detail.update(_said_at(event))
    if reading.request:
        detail["request"] = reading.request
    if reading.hedged:
        detail["hedged"] = True
    candidate = Candidate(
        user_id=context.user_id,
        session_id=context.session_id,
        task_id=context.task_id,
        memory_type=kind.memory_type,
        subtype=kind.subtype,
        summary=summary,
        detail=detail,
        entities=tuple(entities),
        tags=_tags(kind.memory_type, kind.name),
        source_kind=SourceKind.USER if by_user else SourceKind.ASSISTANT,
        message_ids=_ids(event.get("id")),
        confidence=confidence,
        importance=kind.importance,
        canonical_fact_key=canonical_key,
        fact_value=fact_value,
        verified=by_user and not reading.hedged,
    )
    return _remembered(candidate) if reading.remember else candidate


def _remembered_fact(
    source: Mapping[str, Any],
    text: str,
    request: Mapping[str, Any],
    context: ExtractionContext,
    reading: Reading | None = None,
    phrase: str = "",
) -> Candidate:
    """What a user asked to remember, as a fact: the statement of `text` (a clause of the
    request's own message, read as `reading`), or the message `text` a bare `phrase` such as
    "remember this" pointed back to."""
    said = _clip(" ".join(text.split()), MAX_REMEMBERED_CHARS)
    statement = reading.text if reading is not None and reading.text else text
    summary = _clip(" ".join(statement.split()), MAX_REMEMBERED_CHARS)
    # Asking to remember a guess does not make it settled.
    hedged = context.vocabulary.matches("hedge", text)
    reason = "asked to remember" + (f": {reading.reason}" if reading else " the message before")
    detail: dict[str, Any] = {"text": said, "kind": "remember", "reason": reason}
    detail.update(_said_at(source))
    if asked := (reading.request if reading is not None else phrase):
        detail["request"] = asked
    return Candidate(
        user_id=context.user_id,
        session_id=context.session_id,
        task_id=context.task_id,
        memory_type=MemoryType.FACT,
        subtype="remembered",
        summary=summary,
        detail=detail,
        entities=tuple(context.vocabulary.find_entities(text)),
        tags=_tags(MemoryType.FACT, "remember"),
        source_kind=SourceKind.USER,
        message_ids=_unique_ids(source.get("id"), request.get("id")),
        confidence=HEDGED_CONFIDENCE if hedged else REMEMBERED_CONFIDENCE,
        importance=REMEMBER_IMPORTANCE,
        verified=not hedged,
        remember=True,
    )


def _remembered(
    candidate: Candidate, request: Mapping[str, Any] | None = None, phrase: str = ""
) -> Candidate:
    """`candidate` flagged as asked to remember with `phrase` ("remember this"), by the
    message `request` if another one."""
    message_ids = candidate.message_ids
    if request is not None:
        message_ids = _unique_ids(*message_ids, request.get("id"))
    detail = candidate.detail
    if phrase and not detail.get("request"):
        detail = {**detail, "request": phrase}
    return replace(
        candidate,
        remember=True,
        importance=max(candidate.importance, REMEMBER_IMPORTANCE),
        message_ids=message_ids,
        detail=detail,
    )


def _is_bare_remember(rest: str, vocabulary: Vocabulary) -> bool:
    """Whether what is left of a remember request says little more than "remember this".

    A first-hand statement is something to remember however short it is: "Don't forget that
    I'm vegetarian" names a fact, "remember this" points at one.
    """
    if vocabulary.find_entities(rest):
        return False
    if weight_of(rest) > BARE_REMEMBER_WEIGHT:
        return False
    stripped = without_leads(rest, vocabulary)
    first_hand = any(p.match(stripped) for p in vocabulary.patterns.get("fact_subject", ()))
    return not (first_hand and weight_of(stripped) >= MIN_FIRST_HAND_WEIGHT)


def _is_filler(rest: str, vocabulary: Vocabulary) -> bool:
    """Whether what a remember request names is an opinion, a feeling or a question
    ("And remember, I'm always here for you"), which is no fact to keep."""
    stripped = without_leads(rest, vocabulary)
    return vocabulary.matches("not_fact", stripped) or vocabulary.matches("question", stripped)


def _said_at(event: Mapping[str, Any]) -> dict[str, str]:
    """When the event was said, for the detail of what it gives: a card promoted from the item
    is as recent as what it was made from, not as its promotion."""
    return {"said_at": str(event["created_at"])} if event.get("created_at") else {}


def _in_order(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Events by `seq` when every event has one, else as given."""
    if all(isinstance(event.get("seq"), int) for event in events):
        return sorted(events, key=lambda event: event["seq"])
    return list(events)


def _append(candidates: list[Candidate], found: list[Candidate]) -> list[int]:
    start = len(candidates)
    candidates.extend(found)
    return list(range(start, len(candidates)))


def _text(content: Any) -> str:
    """Message content as text: strings as they are, content parts joined, the rest as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str | Mapping)
        ]
        return "\n".join(part for part in parts if part)
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


def _tags(memory_type: str, kind: str) -> tuple[str, ...]:
    return (memory_type,) if kind == memory_type else (memory_type, kind)


def _ids(value: Any) -> tuple[str, ...]:
    return (str(value),) if value else ()


def _unique_ids(*values: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(value) for value in values if value))


def _unique_names(names: Sequence[str]) -> list[str]:
    """Names without repeats, case aside, in order."""
    seen: set[str] = set()
    unique = []
    for name in names:
        if name.lower() not in seen:
            seen.add(name.lower())
            unique.append(name)
    return unique


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
