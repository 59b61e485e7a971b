"""Redaction of candidates before the policy judges them (the detectors are in
`memoryproject.redaction`, shared by every writer)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memories.write.candidates import Candidate
from memoryproject.redaction import NAMES_CONTEXT, Redactor, Report, redact_record

# Fields whose value is the memory itself: one that held nothing but sensitive content
# leaves nothing to store.
WHOLE_FIELDS = ("summary", "fact_value", "canonical_fact_key", "task_id", "subtype")


@dataclass(frozen=True)
class RedactedCandidate:
    """A candidate after redaction, the kinds removed, and the fields (by path, e.g.
    `summary`, `entities.2`, `detail.card`) that held nothing but sensitive content."""

    candidate: Candidate
    kinds: frozenset[str]
    emptied: tuple[str, ...]

    @property
    def nothing_left(self) -> bool:
        """Whether a field the item cannot do without was all sensitive."""
        return any(path.split(".", 1)[0] in WHOLE_FIELDS for path in self.emptied)


def redact_candidate(candidate: Candidate, *, redactor: Redactor) -> RedactedCandidate:
    """The candidate with every text field redacted; entities and tags that were nothing but
    sensitive content are left out (and named in `emptied`). A value found in one field is
    redacted in every other: `my password is hunter2x06` makes an entity `hunter2x06` go."""

    def redact(redactor: Redactor, report: Report) -> Candidate:
        def text(name: str, value: str, context: str = "") -> str:
            return str(redactor.value(value, path=name, report=report, context=context))

        return replace(
            candidate,
            summary=text("summary", candidate.summary),
            task_id=text("task_id", candidate.task_id),
            subtype=text("subtype", candidate.subtype),
            canonical_fact_key=text("canonical_fact_key", candidate.canonical_fact_key),
            # The key names what the value is: `profile.bank_card` makes any card number count.
            fact_value=text("fact_value", candidate.fact_value, candidate.canonical_fact_key),
            detail=redactor.value(dict(candidate.detail), path="detail", report=report),
            entities=tuple(
                redactor.strings(
                    candidate.entities, path="entities", report=report, context=NAMES_CONTEXT
                )
            ),
            tags=tuple(
                redactor.strings(candidate.tags, path="tags", report=report, context=NAMES_CONTEXT)
            ),
        )

    redacted, report = redact_record(redactor, redact)
    return RedactedCandidate(redacted, frozenset(report.kinds), tuple(report.emptied))
