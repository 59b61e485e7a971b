"""Reading one sentence: what kind of statement it is, why, and the key it fills.

Both write paths use this reading, so a statement is judged the same way whether the rule
extractor finds it in a transcript or an agent submits it as a proposal. Only a transcript's
sentence is split into clauses first: a proposal is one statement by construction. Every word
list and pattern is a vocabulary kind (tenant-extensible); the reading keeps the reason it gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memories.vocabulary import Vocabulary
from memories.write.candidates import Candidate, SourceKind
from profiles.domains import FACT_DOMAINS, key_problem

MAX_LEADS = 4
# What a stated fact must weigh once its subject is read (two per Latin word, one per CJK
# character): "I did" or "我也是" say nothing to remember.
MIN_FACT_WEIGHT = 5
REMEMBERED_CONFIDENCE = 0.8
LEAD_PUNCTUATION = " \t,，:：;；-—~～"
# The reason of a sentence no word list or pattern read: the one left to read by meaning.
NOTHING_FOUND = "states nothing about the user, their world or their work"
# What a sentence read by meaning must weigh: "别用表格" (4) says enough, "ok then" does not.
MIN_MEANING_WEIGHT = 4

SENTENCE_END = re.compile(r"[。！？；\n]+|[.!?;]+(?=\s|$)")
# The word a full stop follows, dots inside it included ("e.g", "U.S").
ABBREVIATED_WORD = re.compile(r"(?<![\w.])[A-Za-z](?:[A-Za-z]*|(?:\.[A-Za-z])+)$")
# Short forms a full stop never ends a sentence after: titles before a name, "e.g.", "vs.".
NEVER_ENDING = frozenset(
    {"mr", "mrs", "ms", "dr", "st", "prof", "sr", "jr", "mt", "ft", "gen", "rev", "hon", "capt",
     "e.g", "i.e", "vs", "cf", "viz"}
)  # fmt: skip
# Short forms a sentence may end with: the stop ends nothing when a lower-case word or a
# number follows ("No. 5", "approx. 3 hours", "etc. and more").
SHORT_FORMS = frozenset(
    {"no", "etc", "inc", "ltd", "co", "corp", "approx", "fig", "ave", "dept", "est",
     "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
     "vol", "ch", "sec", "pp", "min", "max", "ca"}
)  # fmt: skip
LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
CJK_CHAR = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
CJK_END = re.compile(r"[\u3400-\u9fff\uf900-\ufaff。！？；]$")
# Words a statement opens with once its remember request is gone, capitalised then.
OPENING_WORD = re.compile(r"(?:i|i'm|i've|i'd|i'll|my|mine|our|we|we're|we've|the)\b")


class Kind:
    EXCLUSION = "exclusion"
    CONCLUSION = "conclusion"  # a finding of the task at hand: "root cause is …", "问题出在…"
    CONSTRAINT = "constraint"
    DECISION = "decision"
    PREFERENCE = "preference"
    FACT = "fact"
    NONE = ""


@dataclass(frozen=True)
class Reading:
    """What one sentence states; `kind` is '' when it states nothing worth a candidate."""

    kind: str
    reason: str
    text: str  # the sentence without its remember request: the statement itself
    hedged: bool = False
    remember: bool = False  # it asks the assistant to remember something
    request: str = ""  # the remember request as said ("Please remember that"), if any
    key: str = ""  # a domain key (`project_metadata.default_env`) the statement fills
    value: str = ""


def sentences_with_ends(text: str) -> list[tuple[str, str]]:
    """Each sentence of `text` (stripped) with the punctuation that ended it.

    A full stop after an abbreviation ("St. Mary's", "Dr. Patel", "e.g. pnpm", "No. 5") or an
    initial ends no sentence, so a value that holds one is kept whole.
    """
    found = []
    start = 0
    for match in SENTENCE_END.finditer(text):
        if match.group(0) == "." and _abbreviation_ends(text, match.start(), match.end()):
            continue
        found.append((text[start : match.start()].strip(), match.group(0)))
        start = match.end()
    found.append((text[start:].strip(), ""))
    return [(sentence, end) for sentence, end in found if sentence]


def _abbreviation_ends(text: str, stop: int, after: int) -> bool:
    """Whether the full stop at `stop` closes an abbreviation or an initial rather than a
    sentence: a title before a name, or a short form before a lower-case word or a number."""
    word = ABBREVIATED_WORD.search(text, 0, stop)
    following = text[after:].lstrip()
    if word is None or not following:
        return False
    name = word.group(0)
    if name.lower() in NEVER_ENDING or (len(name) == 1 and name.isupper()):
        return True
    continues = following[0].islower() or following[0].isdigit() or following[0] in "(（"
    return continues and (name.lower() in SHORT_FORMS or len(name) == 1 or "." in name)


def clauses_of(sentence: str, vocabulary: Vocabulary) -> list[str]:
    """The clauses of a sentence of a transcript, split where a `clause_break` starts a new
    first-person clause (", and I ...", "，我…"), each stripped.

    A break counts only when the part before it holds a `clause_subject` of its own and is
    no `clause_dependent`, so "Tom and I went hiking" and "If I can and I have time, ..."
    stay whole; a `finding_break` (a comma before a second finding of the task: "已排除数据库，
    问题出在连接池") always counts.
    """
    breaks = sorted(
        (match.start(), match.end(), kind)
        for kind in ("clause_break", "finding_break")
        for pattern in vocabulary.patterns.get(kind, ())
        for match in pattern.finditer(sentence)
        if match.end() > match.start()
    )
    clauses = []
    start = 0
    for break_start, break_end, kind in breaks:
        if break_start < start:
            continue  # two patterns matched the same break
        part = sentence[start:break_start].strip(LEAD_PUNCTUATION)
        if not part:
            continue
        if kind == "finding_break" or (
            vocabulary.matches("clause_subject", part)
            and not vocabulary.matches("clause_dependent", without_leads(part, vocabulary))
        ):
            clauses.append(part)
            start = break_end
    clauses.append(sentence[start:].strip(LEAD_PUNCTUATION))
    return [clause for clause in clauses if clause]


def weight_of(text: str) -> int:
    return 2 * len(LATIN_WORD.findall(text)) + len(CJK_CHAR.findall(text))


def remember_request(text: str, vocabulary: Vocabulary) -> tuple[str, str]:
    """The sentence without its remember request, and the request as said.

    "Please remember that I deploy with Terraform" is the statement "I deploy with Terraform"
    and the request "Please remember that" ("Don't forget that ..." is no constraint either).
    Pieces of a request said in two places are joined with " … ".
    """
    requests: list[str] = []
    for pattern in vocabulary.patterns.get("remember", ()):
        found = [m.group(0).strip(LEAD_PUNCTUATION) for m in pattern.finditer(text) if m.group(0)]
        if found:
            requests.extend(piece for piece in found if piece)
            text = pattern.sub(" ", text)
    statement = " ".join(text.split()).strip(LEAD_PUNCTUATION)
    if requests and OPENING_WORD.match(statement):
        # "remember that our ..." → "Our ...": the statement now opens the sentence
        statement = statement[0].upper() + statement[1:]
    return statement, " … ".join(requests)


def without_leads(text: str, vocabulary: Vocabulary) -> str:
    """The sentence without leading fillers and time expressions ("So yesterday, I ...")."""
    patterns = vocabulary.patterns.get("lead", ())
    for _ in range(MAX_LEADS):
        text = text.strip(LEAD_PUNCTUATION)
        for pattern in patterns:
            match = pattern.match(text)
            if match and match.end() > 0:
                text = text[match.end() :]
                break
        else:
            break
    return text.strip(LEAD_PUNCTUATION)


def _first(vocabulary: Vocabulary, kind: str, text: str, *, at_start: bool = False) -> str:
    """The first pattern of `kind` that matches (at the start only, if asked), or ''."""
    for pattern in vocabulary.patterns.get(kind, ()):
        if pattern.match(text) if at_start else pattern.search(text):
            return pattern.pattern
    return ""


def keyed_value(text: str, vocabulary: Vocabulary) -> tuple[str, str]:
    """The domain key and value a `keyed_statement` pattern finds: its named group is the key
    with `__` for each dot (`project_metadata__default_env` → `project_metadata.default_env`)."""
    for pattern in vocabulary.patterns.get("keyed_statement", ()):
        match = pattern.search(text)
        if match is None:
            continue
        for name, value in match.groupdict().items():
            key = name.replace("__", ".")
            if value and key_problem(key, domains=FACT_DOMAINS) is None:
                return key, value.strip().rstrip(".,，。")
    return "", ""


def preference_topic(text: str, vocabulary: Vocabulary) -> str:
    """`preference.<topic>` when the sentence is about how the assistant answers, else ''."""
    for pattern in vocabulary.patterns.get("preference_topic", ()):
        match = pattern.search(text)
        if match is None:
            continue
        for name, value in match.groupdict().items():
            if value:
                return f"preference.{name}"
    return ""


def is_question(sentence: str, end: str, vocabulary: Vocabulary) -> bool:
    return "?" in end or "？" in end or vocabulary.matches("question", sentence)


def read_sentence(
    sentence: str, vocabulary: Vocabulary, *, end: str = "", by_user: bool = True
) -> Reading:
    """Read one sentence of a user (or, with fewer kinds, the assistant)."""
    if vocabulary.matches("chitchat", sentence):
        return Reading(Kind.NONE, "chit-chat", sentence)
    remember = by_user and vocabulary.matches("remember", sentence)
    text, request = remember_request(sentence, vocabulary) if remember else (sentence, "")
    if request and vocabulary.matches("request_question", request):
        # "Can you remember that I ...?": the question mark asks the request, not the statement
        end = ""
    hedged = vocabulary.matches("hedge", text)
    reading = _read(text, vocabulary, end=end, hedged=hedged, by_user=by_user)
    return replace(reading, text=text, hedged=hedged, remember=remember, request=request)


def read_clauses(
    sentence: str, vocabulary: Vocabulary, *, end: str = "", by_user: bool = True
) -> list[tuple[str, Reading]]:
    """Each clause of a transcript sentence with its reading.

    A remember request in the first clause ("Please remember that I ... and I ...") asks to
    remember every statement of the sentence. Only the last clause carries the sentence's
    end, so a closing question mark does not turn the clauses before it into questions.
    """
    clauses = clauses_of(sentence, vocabulary)
    if len(clauses) <= 1:
        return [(sentence, read_sentence(sentence, vocabulary, end=end, by_user=by_user))]
    last = len(clauses) - 1
    readings = [
        read_sentence(clause, vocabulary, end=end if index == last else "", by_user=by_user)
        for index, clause in enumerate(clauses)
    ]
    if readings[0].remember:
        first = readings[0]
        readings = [
            replace(r, remember=True, request=r.request or first.request) if r.kind else r
            for r in readings
        ]
    return list(zip(clauses, readings, strict=True))


def _read(text: str, vocabulary: Vocabulary, *, end: str, hedged: bool, by_user: bool) -> Reading:
    if not text:
        return Reading(Kind.NONE, "nothing besides the remember request", text)
    if pattern := _first(vocabulary, "exclusion", text):
        if hedged:
            return Reading(Kind.NONE, "a hedged exclusion is a guess", text)
        return Reading(Kind.EXCLUSION, f"rules something out ({pattern})", text)
    stripped = without_leads(text, vocabulary)
    if by_user and (constraint := _constraint(text, stripped, vocabulary)):
        if _asks(text, end, vocabulary):
            return Reading(Kind.NONE, "a question, not an instruction", text)
        if advice := _advice(text, stripped, vocabulary):
            return Reading(Kind.NONE, advice, text)
        return Reading(Kind.CONSTRAINT, constraint, text)
    decision = _first(vocabulary, "decision", text)
    personal = vocabulary.matches("personal_decision", stripped)
    if decision and not (personal and not vocabulary.find_entities(text)):
        if hedged and not by_user:
            return Reading(Kind.NONE, "the assistant's hedged claim is a guess", text)
        return Reading(Kind.DECISION, f"a decision ({decision})", text)
    conclusion = _first(vocabulary, "conclusion", text)
    if not by_user:
        if not conclusion:
            return Reading(Kind.NONE, "no conclusion, decision or exclusion by the assistant", text)
        if hedged:
            return Reading(Kind.NONE, "a hedged conclusion is a guess", text)
        if is_question(stripped, end, vocabulary):
            return Reading(Kind.NONE, "a question, not a conclusion", text)
        return Reading(Kind.CONCLUSION, f"states a finding ({conclusion})", text)
    key, value = keyed_value(text, vocabulary)
    question = is_question(stripped, end, vocabulary)
    preference = _preference(text, stripped, vocabulary)
    if preference and not question:
        topic_key = key if key.startswith("preference.") else preference_topic(text, vocabulary)
        value = value if key == topic_key and value else " ".join(text.split())
        return Reading(Kind.PREFERENCE, preference, text, key=topic_key, value=value)
    if question:
        return Reading(Kind.NONE, "a question", text)
    if hedged:
        return Reading(Kind.NONE, "a hedged statement is a guess", text)
    if key:
        kind = Kind.PREFERENCE if key.startswith("preference.") else Kind.FACT
        return Reading(kind, f"states {key}", text, key=key, value=value)
    if fact := _stated_fact(text, stripped, vocabulary):
        return Reading(Kind.FACT, fact, text)
    if conclusion:
        # A finding of the task at hand that states no fact of the user's world.
        return Reading(Kind.CONCLUSION, f"states a finding ({conclusion})", text)
    return Reading(Kind.NONE, NOTHING_FOUND, text)


def _constraint(text: str, stripped: str, vocabulary: Vocabulary) -> str:
    """Why the sentence is an instruction to the assistant, or '' when it is not."""
    word = _first(vocabulary, "constraint", text)
    if not word or vocabulary.matches("not_instruction", text):
        return ""
    if pattern := _first(vocabulary, "constraint", stripped, at_start=True):
        return f"an instruction starting with {pattern}"
    if pattern := _first(vocabulary, "instruction", text):
        return f"an instruction ({pattern}) with {word}"
    return ""


def _asks(text: str, end: str, vocabulary: Vocabulary) -> bool:
    """Whether the sentence is a question ("Don't you think it's early?") rather than a request
    put as one ("Never deploy on Fridays, ok?", "Could you never use tables?")."""
    asked = "?" in end or "？" in end
    return asked and not vocabulary.matches("request_question", text)


def _advice(text: str, stripped: str, vocabulary: Vocabulary) -> str:
    """Why an imperative is advice to the person spoken to about their own life, or ''.

    "Make sure you stretch before your run" is said to a friend, not to the assistant: what
    it asks concerns the listener's body, family, trips or plans, not the assistant's work.
    """
    pattern = _first(vocabulary, "advice", text) or _first(vocabulary, "advice", stripped)
    return f"advice to the person spoken to about their own life ({pattern})" if pattern else ""


def _preference(text: str, stripped: str, vocabulary: Vocabulary) -> str:
    """Why the sentence is a preference about the assistant's work, or ''."""
    topic = preference_topic(text, vocabulary)
    marker = _first(vocabulary, "preference", text)
    addressed = _first(vocabulary, "preference_addressed", text)
    if vocabulary.matches("not_instruction", text):
        return ""
    if topic and (marker or addressed):
        return f"a preference ({marker or addressed}) about {topic}"
    key, _ = keyed_value(text, vocabulary)
    if key.startswith("preference.") and (marker or addressed):
        return f"a preference ({marker or addressed}) filling {key}"
    return ""


def _stated_fact(text: str, stripped: str, vocabulary: Vocabulary) -> str:
    """Why the sentence states a fact about the user, their world or their projects, or ''."""
    if weight_of(stripped) < MIN_FACT_WEIGHT:
        return ""
    if vocabulary.matches("not_fact", stripped):
        return ""
    if pattern := _first(vocabulary, "fact_subject", stripped, at_start=True):
        return f"a first-hand statement ({pattern})"
    if pattern := _first(vocabulary, "fact_event", stripped):
        return f"tells what the user did ({pattern})"
    if (pattern := _first(vocabulary, "fact_world", text)) and vocabulary.find_entities(text):
        return f"a statement about a known system ({pattern})"
    return ""


def proposal_read(candidate: Candidate, vocabulary: Vocabulary) -> Candidate:
    """An agent's proposal with what the same words would earn from a transcript.

    A user's unhedged statement read from a transcript counts as settled (verified) with the
    confidence of its kind; a proposal whose summary reads the same way gets the same, so the
    policy decides both alike. What the proposer set explicitly is kept.
    """
    if candidate.source_kind != SourceKind.PROPOSAL:
        return candidate
    sentences = sentences_with_ends(candidate.summary)
    readings = [read_sentence(sentence, vocabulary, end=end) for sentence, end in sentences]
    if not readings:
        return candidate
    candidate = _as_statements(candidate, sentences, readings)
    stated = [r for r in readings if r.kind and not r.hedged]
    remember = candidate.remember or any(r.remember for r in readings)
    hedged = any(r.hedged for r in readings)
    confidence = candidate.confidence
    if stated:
        confidence = max(confidence, *(KIND_CONFIDENCE[r.kind] for r in stated))
    elif remember and not hedged:
        confidence = max(confidence, REMEMBERED_CONFIDENCE)
    else:
        return replace(candidate, remember=remember)
    keyed = next((r for r in stated if r.key), None)
    changes: dict[str, object] = {"verified": True, "confidence": confidence, "remember": remember}
    if keyed is not None and not candidate.canonical_fact_key:
        changes.update(canonical_fact_key=keyed.key, fact_value=keyed.value)
    return replace(candidate, **changes)  # type: ignore[arg-type]


def _as_statements(
    candidate: Candidate, sentences: list[tuple[str, str]], readings: list[Reading]
) -> Candidate:
    """The proposal with each remembered sentence of its summary put as its statement, as the
    extractor puts it ("Please remember that I deploy with Terraform." → "I deploy with
    Terraform."); the summary as sent and the requests go to `detail.text` and
    `detail.request`, unless the proposer set those."""
    requests = [r.request for r in readings if r.request and r.text]
    if not requests:
        return candidate
    summary = ""
    for (sentence, end), reading in zip(sentences, readings, strict=True):
        piece = (reading.text if reading.request and reading.text else sentence) + end.strip()
        # Chinese sentences follow each other without a space, others with one.
        summary += piece if not summary or CJK_END.search(summary) else f" {piece}"
    detail = {"text": candidate.summary, "request": " … ".join(requests), **candidate.detail}
    return replace(candidate, summary=summary, detail=detail)


# Confidence of a user's unhedged statement of each kind.
KIND_CONFIDENCE = {
    Kind.EXCLUSION: 0.9,
    Kind.CONCLUSION: 0.85,
    Kind.CONSTRAINT: 0.9,
    Kind.DECISION: 0.85,
    Kind.PREFERENCE: 0.85,
    Kind.FACT: 0.8,
}
