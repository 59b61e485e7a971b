"""The promotion review form: the decisions a reviewer can take on one proposal, and the
editable fields of its path (a profile fact's value, or a card's fields)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from django import forms

from memories.ltm.models import LtmCard
from memories.review.admin_common import pretty, reason_field
from memories.review.models import PromotionRequest
from memories.review.repeats import Repeat
from memories.review.selectors import domain_keys_for

PROFILE_FACT = PromotionRequest.Path.POSTGRES
CARD = PromotionRequest.Path.LTM


class PromotionDecision:
    APPROVE = "approve"
    APPROVE_NEW = "approve_new"  # a card although it repeats a live one, with a reason
    REJECT = "reject"
    MERGE = "merge"
    RETARGET = "retarget"  # to a profile fact under the chosen key
    RETARGET_LTM = "retarget_ltm"  # to a card
    CHOICES = [
        (APPROVE, "Approve"),
        (APPROVE_NEW, "Approve as a new card"),
        (REJECT, "Reject"),
        (MERGE, "Merge into card"),
        (RETARGET, "Make it a profile fact under this key"),
        (RETARGET_LTM, "Make it a long-term card"),
    ]
    CARD_ONLY = (APPROVE_NEW, MERGE)
    # The button pressed names the decision; "Approve with edits" of older pages is Approve.
    # "_merge_into" is the merge offer of a repeated card: its value names the card.
    BUTTONS = {
        "_approve": APPROVE,
        "_approve_edited": APPROVE,
        "_approve_new": APPROVE_NEW,
        "_reject": REJECT,
        "_merge": MERGE,
        "_merge_into": MERGE,
        "_retarget": RETARGET,
        "_retarget_ltm": RETARGET_LTM,
    }


def proposal_digest(promotion: PromotionRequest) -> str:
    """What the page showed, so a decision on a proposal changed meanwhile is refused."""
    raw = orjson.dumps([promotion.path, promotion.proposal], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:16]


def _as_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _card_choices(
    promotion: PromotionRequest, repeats: Sequence[Repeat] = ()
) -> list[tuple[str, str]]:
    """Cards to merge into: those it repeats, the nearest ones found when proposed, then the
    user's newest."""
    seen: dict[str, str] = {
        r.memory_id: f"{r.memory_id}: {r.title or r.summary} (repeated)"[:120] for r in repeats
    }
    for hit in (promotion.existing or {}).get("similar", []):
        if hit.get("memory_id"):
            label = hit.get("title") or hit.get("summary", "")
            seen.setdefault(hit["memory_id"], f"{hit['memory_id']}: {label}"[:120])
    if promotion.end_user_id:
        newest = (
            LtmCard.objects.filter(
                tenant=promotion.tenant_id,
                end_user=promotion.end_user_id,
                status=LtmCard.Status.ACTIVE,
            )
            .order_by("-updated_at")
            .values_list("memory_id", "title", "summary")[:20]
        )
        for memory_id, title, summary in newest:
            seen.setdefault(memory_id, f"{memory_id}: {title or summary}"[:120])
    return [("", "---------"), *seen.items()]


class PromotionReviewForm(forms.Form):
    """A reviewer's decision on one proposal, with the editable fields of its path."""

    decision = forms.ChoiceField(choices=PromotionDecision.CHOICES)
    shown = forms.CharField(widget=forms.HiddenInput, required=False)
    reason = reason_field()
    value = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text="Text values as they are; numbers, lists and objects as JSON.",
    )
    title = forms.CharField(
        required=False, max_length=300, widget=forms.TextInput(attrs={"size": 80})
    )
    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))
    content = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))
    memory_type = forms.ChoiceField(required=False, choices=LtmCard.Type.choices)
    entities = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 80}), help_text="Comma-separated."
    )
    tags = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 80}), help_text="Comma-separated."
    )
    memory_id = forms.ChoiceField(required=False, label="Merge into card")
    retarget_key = forms.ChoiceField(
        required=False,
        label="Domain key",
        help_text="A profile fact writes this key of the user's profile: a preference for "
        "preference.* and profile.*, a stable fact otherwise.",
    )
    retarget_value = forms.CharField(
        required=False,
        label="Value",
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Left empty: the value the evidence holds (or the proposal's summary).",
    )

    PROFILE_FACT_FIELDS = ("value",)
    CARD_FIELDS = ("title", "summary", "content", "memory_type", "entities", "tags", "memory_id")
    EDITABLE = ("value", "title", "summary", "content", "memory_type", "entities", "tags")

    def __init__(
        self,
        *args: Any,
        promotion: PromotionRequest,
        repeats: Sequence[Repeat] = (),
        **kwargs: Any,
    ) -> None:
        self.promotion = promotion
        proposal = promotion.proposal
        initial: dict[str, Any] = {
            "value": pretty(proposal.get("value")),
            "shown": proposal_digest(promotion),
            "retarget_key": proposal.get("key", ""),
            "memory_id": repeats[0].memory_id if repeats else "",
        }
        for name in ("title", "summary", "content", "memory_type"):
            initial[name] = proposal.get(name, "")
        for name in ("entities", "tags"):
            initial[name] = ", ".join(str(v) for v in proposal.get(name, []))
        kwargs["initial"] = {**initial, **kwargs.get("initial", {})}
        super().__init__(*args, **kwargs)
        self.is_profile_fact = promotion.path == PROFILE_FACT
        for name in self.CARD_FIELDS if self.is_profile_fact else self.PROFILE_FACT_FIELDS:
            del self.fields[name]
        decision = self.fields["decision"]
        assert isinstance(decision, forms.ChoiceField)
        if self.is_profile_fact:
            decision.choices = [
                c for c in PromotionDecision.CHOICES if c[0] not in PromotionDecision.CARD_ONLY
            ]
        else:
            merge_into = self.fields["memory_id"]
            assert isinstance(merge_into, forms.ChoiceField)
            merge_into.choices = _card_choices(promotion, repeats)
        item_key = str((promotion.evidence.get("item") or {}).get("canonical_fact_key") or "")
        keys = domain_keys_for(
            tenant=promotion.tenant, also=[k for k in (proposal.get("key"), item_key) if k]
        )
        retarget_key = self.fields["retarget_key"]
        assert isinstance(retarget_key, forms.ChoiceField)
        retarget_key.choices = [("", "---------"), *((k, k) for k in keys)]
        self.edits: dict[str, Any] = {}

    @classmethod
    def decision_of(cls, post: Mapping[str, Any]) -> dict[str, Any]:
        """The submitted data with `decision` taken from the button that was pressed."""
        data = dict(post.items())
        data["decision"] = next(
            (value for button, value in PromotionDecision.BUTTONS.items() if button in post), ""
        )
        if post.get("_merge_into"):
            data["memory_id"] = post["_merge_into"]
        return data

    def edit_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.EDITABLE if name in self.fields]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        decision = cleaned.get("decision")
        shown = cleaned.get("shown")
        if shown and shown != proposal_digest(self.promotion):
            raise forms.ValidationError(
                "This proposal changed since the page was opened (another reviewer retargeted "
                "or decided it); nothing was decided. Read it again below, then decide.",
                code="stale",
            )
        self.edits = self._edits(cleaned)
        if decision == PromotionDecision.MERGE and not cleaned.get("memory_id"):
            self.add_error("memory_id", "Pick the card to merge into.")
        if decision == PromotionDecision.REJECT and not cleaned.get("reason", "").strip():
            self.add_error("reason", "Say why the proposal is rejected.")
        if decision == PromotionDecision.APPROVE_NEW and not cleaned.get("reason", "").strip():
            self.add_error("reason", "Say why it should be a new card beside the one it repeats.")
        if decision in (PromotionDecision.RETARGET, PromotionDecision.RETARGET_LTM):
            if self.edits:
                changed = ", ".join(sorted(self.edits))
                raise forms.ValidationError(
                    f"You changed {changed}: retargeting starts again from the proposal as "
                    "recorded, so those edits would be lost. Approve them, or put them back, "
                    "before retargeting.",
                    code="edits_differ",
                )
            if decision == PromotionDecision.RETARGET and not cleaned.get("retarget_key"):
                self.add_error("retarget_key", "Pick the domain key to promote to.")
        return cleaned

    def _edits(self, cleaned: dict[str, Any]) -> dict[str, Any]:
        """The editable fields the page sent whose value differs from the proposal (a field
        the page did not send is not an edit)."""
        proposal = self.promotion.proposal
        sent = {name for name in self.EDITABLE if name in self.fields and name in self.data}
        submitted: dict[str, Any] = {}
        if "value" in sent:
            original, text = proposal.get("value"), cleaned.get("value", "")
            if isinstance(original, str):
                submitted["value"] = text.strip()
            else:
                try:
                    submitted["value"] = json.loads(text)
                except ValueError:
                    self.add_error("value", "Enter the value as JSON, like the current one.")
                    return {}
        for name in ("title", "summary", "content", "memory_type"):
            if name in sent:
                submitted[name] = cleaned.get(name, "")
        for name in ("entities", "tags"):
            if name in sent:
                submitted[name] = _as_list(cleaned.get(name, ""))
        unset: dict[str, Any] = {"entities": [], "tags": []}
        return {
            name: v for name, v in submitted.items() if v != proposal.get(name, unset.get(name, ""))
        }
