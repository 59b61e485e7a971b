"""Whether a long-term card proposal repeats a live card of its user, so that approving it
offers to merge instead of making a second card of the same fact.

A proposal repeats a card when its summary and one of the card's statements (its summary, or a
line of its content, where merges add theirs):

- are the same text once case, punctuation and spaces are left out (the normal form the write
  fingerprint hashes), or
- use the same terms, or the terms of one are all among the other's and they share at least two
  thirds of all their terms, and neither denies what the other states.

Terms are what Elasticsearch ranks by: stemmed English words and segmented Chinese words, stop
words left out ("I deploy with Terraform" and "Deploys with Terraform" are both {deploy,
terraform}). A term on each side that the other lacks is a different value, however much else
is shared: "restored at 02:00 UTC" and "restored at 03:00 UTC", "my sister's birthday" and "my
brother's birthday", or Terraform and Helm are different facts. Words only added are the same
fact said more fully ("I deploy everything with Terraform", 2 of 3 terms shared; "我用 Terraform
来部署", 3 of 4), unless they outweigh what is shared ("I deploy with Terraform and Helm, and
the databases with Ansible", 2 of 5). docs/review.md lists the examples behind the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from django.db import connection

from memories.facts import normalise_fact
from memories.ltm.models import LtmCard
from memories.ltm.text import bm25_terms
from profiles.models import EndUser, Tenant

# Of all the terms of the two statements, at least this share must be in both.
NEAR_SHARE = Fraction(2, 3)
MIN_TERMS = 2  # a statement of one term ("Terraform") repeats nothing by its terms alone
# The user's newest live cards a proposal is compared with (a user holds far fewer).
MAX_CARDS = 1000
CARD_LOCK_NAMESPACE = 0x4D454D43  # the review's advisory locks on a user's cards

_CONTRACTIONS = (
    (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"'m\b", re.I), " am"),
    (re.compile(r"'re\b", re.I), " are"),
    (re.compile(r"'ve\b", re.I), " have"),
    (re.compile(r"'ll\b", re.I), " will"),
    (re.compile(r"'d\b", re.I), " would"),
)
_NO_TERMS = frozenset({"am"})  # left by "I'm"; the stop words have "is" and "are"
_NEGATION = re.compile(
    r"\b(?:not|no|never|nothing|none|nobody|neither|nor|cannot|without)\b"
    r"|不|没|别|勿|无法|从未",
    re.IGNORECASE,
)


class Rule:
    SAME_TEXT = "same_text"
    NEAR_TEXT = "near_text"


@dataclass(frozen=True)
class Repeat:
    """A live card a proposal repeats, and why, in words a reviewer reads."""

    memory_id: str
    title: str
    summary: str
    version: int
    rule: str
    why: str
    similarity: float  # share of terms in both, 1.0 for the same text

    def as_dict(self) -> dict[str, object]:
        return {
            "memory_id": self.memory_id,
            "version": self.version,
            "rule": self.rule,
            "why": self.why,
            "similarity": round(self.similarity, 3),
        }


def _expanded(text: str) -> str:
    """The text with its contractions spelled out ("I'm" → "I am", "don’t" → "do not")."""
    text = text.replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def statement_terms(text: str) -> frozenset[str]:
    """The terms two statements are compared by."""
    return frozenset(bm25_terms(_expanded(text))) - _NO_TERMS


def denies(text: str) -> bool:
    """Whether the statement says no ("I don't deploy with Terraform", "我不用 Terraform")."""
    return bool(_NEGATION.search(_expanded(text)))


def statements_of(card: LtmCard) -> list[tuple[str, str]]:
    """The card's statements with where each is: its summary, then each line of its content."""
    found = [("summary", card.summary)] if card.summary.strip() else []
    for line in card.content.splitlines():
        line = line.strip().lstrip("-•* ").strip()
        if line:
            found.append(("content", line))
    return found


def repeat_between(summary: str, statements: Iterable[tuple[str, str]]) -> tuple[str, str, float]:
    """(rule, why, similarity) of the statement `summary` repeats best, or ('', '', 0.0)."""
    normal = normalise_fact(summary)
    mine = statement_terms(summary)
    best: tuple[str, str, float] = ("", "", 0.0)
    for where, text in statements:
        if normal and normalise_fact(text) == normal:
            return Rule.SAME_TEXT, f"the same text as the card's {where}", 1.0
        theirs = statement_terms(text)
        if len(mine) < MIN_TERMS or len(theirs) < MIN_TERMS or denies(summary) != denies(text):
            continue
        if not (mine <= theirs or theirs <= mine):
            continue  # a term of each side the other lacks: another value, another fact
        shared, every = len(mine & theirs), len(mine | theirs)
        if Fraction(shared, every) < NEAR_SHARE or shared / every <= best[2]:
            continue
        if mine == theirs:
            why = f"the same terms as the card's {where}"
        elif mine < theirs:
            why = f"all its terms are in the card's {where} ({shared} of {every} shared)"
        else:
            added = ", ".join(sorted(mine - theirs))
            why = f"the card's {where} with {added} added ({shared} of {every} terms shared)"
        best = (Rule.NEAR_TEXT, why, shared / every)
    return best


def repeated_cards(*, tenant: Tenant, end_user: EndUser | None, summary: str) -> list[Repeat]:
    """The user's live cards that `summary` repeats, closest first (none for no user)."""
    if end_user is None or not summary.strip():
        return []
    cards = (
        LtmCard.objects.filter(tenant=tenant, end_user=end_user, status=LtmCard.Status.ACTIVE)
        .only("memory_id", "title", "summary", "content", "version")
        .order_by("-updated_at")[:MAX_CARDS]
    )
    found = [repeat for card in cards if (repeat := repeat_of(card, summary)) is not None]
    return sorted(found, key=lambda r: (r.rule != Rule.SAME_TEXT, -r.similarity))


def repeat_of(card: LtmCard, summary: str) -> Repeat | None:
    """How the statement `summary` repeats `card`, or None when it does not."""
    rule, why, similarity = repeat_between(summary, statements_of(card))
    if not rule:
        return None
    return Repeat(card.memory_id, card.title, card.summary, card.version, rule, why, similarity)


def lock_cards_of(end_user: EndUser | None) -> None:
    """Serialise card decisions on one user's proposals until the transaction ends, so two
    reviewers approving two proposals of the same fact at once still get one card."""
    if end_user is None:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [CARD_LOCK_NAMESPACE, end_user.pk])
