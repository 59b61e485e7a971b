"""A tenant's settings read across the pipelines: write, recall, forgetting and promotion
policies, and its additions to the default vocabulary.

They sit below every layer that reads them (short-term store, write, long-term, history,
recall, review), so each pipeline asks for its tenant's settings without importing another.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from profiles.models import Tenant

DEFAULT_WEIGHTS = {
    "verified": 3,
    "user_constraint": 3,
    "decision": 2,
    "stable_for_task": 2,
    "novelty_high": 2,
    "confidence_high": 1,
    "duplicate": -3,
    "transient": -2,
    "raw_blob": -2,
}
DEFAULT_TTL_MINUTES = {
    "constraint": 24 * 60,
    "decision": 12 * 60,
    "preference": 7 * 24 * 60,
    "fact": 6 * 60,
    "observation": 2 * 60,
    "hypothesis": 30,
}


def _default_weights() -> dict[str, int]:
    return dict(DEFAULT_WEIGHTS)


def _default_ttls() -> dict[str, int]:
    return dict(DEFAULT_TTL_MINUTES)


# The settings a write policy holds (everything but its tenant and version bookkeeping).
POLICY_FIELDS = (
    "weights",
    "write_threshold",
    "novelty_high_threshold",
    "confidence_high_threshold",
    "transient_ttl_minutes",
    "raw_blob_chars",
    "max_summary_chars",
    "ttl_minutes_by_type",
    "min_ttl_minutes",
    "max_ttl_minutes",
)


class WritePolicy(models.Model):
    """A tenant's rules for what enters short-term memory; each save is a new version."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="write_policies")
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    weights = models.JSONField(default=_default_weights)
    write_threshold = models.IntegerField(default=3)
    novelty_high_threshold = models.FloatField(default=0.5)
    confidence_high_threshold = models.FloatField(default=0.8)
    transient_ttl_minutes = models.PositiveIntegerField(
        default=10, help_text="Candidates expected to live less than this count as transient."
    )
    raw_blob_chars = models.PositiveIntegerField(
        default=400, help_text="A summary longer than this is raw text, not a structured fact."
    )
    max_summary_chars = models.PositiveIntegerField(
        default=2000, help_text="Longer candidates (raw logs) are never stored."
    )
    ttl_minutes_by_type = models.JSONField(default=_default_ttls)
    min_ttl_minutes = models.PositiveIntegerField(default=5)
    max_ttl_minutes = models.PositiveIntegerField(default=30 * 24 * 60)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant", "-version"]
        verbose_name_plural = "write policies"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "version"], name="writepolicy_unique_version"
            ),
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(is_current=True), name="writepolicy_one_current"
            ),
        ]

    def __str__(self) -> str:
        return f"write policy v{self.version} of {self.tenant}"

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        unknown = set(self.weights or {}) - set(DEFAULT_WEIGHTS)
        if not isinstance(self.weights, dict) or unknown:
            errors["weights"] = f"Use only the terms {', '.join(DEFAULT_WEIGHTS)}."
        elif not all(isinstance(v, int | float) for v in self.weights.values()):
            errors["weights"] = "Weights must be numbers."
        ttls = self.ttl_minutes_by_type
        if not isinstance(ttls, dict) or not all(
            isinstance(v, int) and v > 0 for v in ttls.values()
        ):
            errors["ttl_minutes_by_type"] = "Give positive whole minutes per memory type."
        if self.min_ttl_minutes > self.max_ttl_minutes:
            errors["min_ttl_minutes"] = "Must not exceed the maximum."
        if errors:
            raise ValidationError(errors)


class VocabularyEntry(models.Model):
    """A tenant's addition to the default word lists: a dictionary term or a pattern."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="vocabulary")
    kind = models.CharField(max_length=32)
    value = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant", "kind", "value"]
        verbose_name_plural = "vocabulary entries"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind", "value"], name="vocabulary_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.value}"

    def clean(self) -> None:
        from memories.vocabulary import (
            DICTIONARY_KIND,
            GUARDED_KINDS,
            REDACTION_KIND,
            compile_pattern,
            vocabulary_kinds,
        )
        from memoryproject.redaction_patterns import pattern_problem

        if self.kind not in vocabulary_kinds():
            raise ValidationError({"kind": f"Use one of {', '.join(vocabulary_kinds())}."})
        if self.kind in GUARDED_KINDS:
            # It runs on every write of the tenant: a slow pattern would stall them all.
            problem = pattern_problem(self.value)
            if problem:
                what = "a redaction" if self.kind == REDACTION_KIND else "an injection"
                raise ValidationError({"value": f"Refused as {what} pattern: {problem}"})
        elif self.kind != DICTIONARY_KIND:
            try:
                compile_pattern(self.kind, self.value)
            except Exception as exc:  # re.error and friends
                raise ValidationError({"value": f"Not a valid pattern: {exc}"}) from None


class RecallPolicy(models.Model):
    """A tenant's recall tuning: score weights, recency decay, defaults and sufficiency."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="recall_policy")
    recency_weight = models.FloatField(default=0.25, validators=[MinValueValidator(0.0)])
    relevance_weight = models.FloatField(default=0.45, validators=[MinValueValidator(0.0)])
    importance_weight = models.FloatField(default=0.25, validators=[MinValueValidator(0.0)])
    confidence_weight = models.FloatField(default=0.05, validators=[MinValueValidator(0.0)])
    recency_decay_per_hour = models.FloatField(
        default=0.03,
        validators=[MinValueValidator(0.0)],
        help_text="λ in recency = exp(−λ·age_hours); 0.03 halves the weight in about a day.",
    )
    min_relevance = models.FloatField(
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Leave out candidates less relevant than this (1 = their layer's best).",
    )
    default_k = models.PositiveIntegerField(default=8, validators=[MinValueValidator(1)])
    default_budget_tokens = models.PositiveIntegerField(
        default=800, validators=[MinValueValidator(50)]
    )
    redis_sufficient_count = models.PositiveIntegerField(
        default=2,
        help_text="Fewer relevant short-term items than this asks long-term memory as well.",
    )
    session_recent_minutes = models.PositiveIntegerField(
        default=30, help_text="A session with a memory newer than this counts as recent."
    )
    history_enabled = models.BooleanField(
        default=True,
        help_text=(
            "Index every conversation turn as searchable history. Off: nothing new is indexed "
            "and history search finds nothing (`reindex_history` removes what was indexed)."
        ),
    )
    # Fusion of the lexical and vector branches of long-term memory and history (weighted
    # RRF: weight / (k + rank)), the relevance floor and the time boost; defaults measured on
    # the LoCoMo development split (docs/recall.md).
    fusion_lexical_weight = models.FloatField(
        default=1.25, validators=[MinValueValidator(0.0)], help_text="RRF weight of BM25 ranks."
    )
    fusion_vector_weight = models.FloatField(
        default=1.0, validators=[MinValueValidator(0.0)], help_text="RRF weight of vector ranks."
    )
    fusion_rrf_k = models.PositiveIntegerField(
        default=5, validators=[MinValueValidator(1)], help_text="k in weight / (k + rank)."
    )
    relevance_floor = models.FloatField(
        default=0.34,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of a query's content terms one memory must hold (and two of them, or "
        "a name) for the query to reach long-term memory and history by itself.",
    )
    time_boost = models.FloatField(
        default=0.5,
        validators=[MinValueValidator(0.0)],
        help_text="Memories inside a time window the query names weigh (1 + this) times "
        "more, those outside it as much less.",
    )
    history_depth = models.PositiveIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Hits each branch of long-term memory and history contributes to the pool.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "recall policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(recency_weight__gte=0)
                & Q(relevance_weight__gte=0)
                & Q(importance_weight__gte=0)
                & Q(confidence_weight__gte=0),
                name="recallpolicy_weights_non_negative",
            )
        ]

    def __str__(self) -> str:
        return f"recall policy of {self.tenant}"

    def clean(self) -> None:
        weights = (
            self.recency_weight,
            self.relevance_weight,
            self.importance_weight,
            self.confidence_weight,
        )
        if sum(weights) <= 0:
            raise ValidationError("At least one score weight must be positive.")


class ForgettingPolicy(models.Model):
    """A tenant's rules for letting long-term cards fade: weight decay, boosts and archiving."""

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, related_name="forgetting_policy"
    )
    decay_after_days = models.PositiveIntegerField(
        default=30, help_text="A card not recalled for this long loses weight at each run."
    )
    decay_factor = models.FloatField(
        default=0.8, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    boost_min_accesses = models.PositiveIntegerField(
        default=5, help_text="A card recalled this often, and recently, gains weight."
    )
    boost_factor = models.FloatField(default=1.25, validators=[MinValueValidator(1.0)])
    min_weight = models.FloatField(default=0.2, validators=[MinValueValidator(0.0)])
    max_weight = models.FloatField(default=2.0, validators=[MinValueValidator(0.0)])
    archive_after_days = models.PositiveIntegerField(
        default=180, help_text="Cards unused for this long may be archived..."
    )
    archive_below_importance = models.FloatField(
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="...when less important than this...",
    )
    archive_max_access_count = models.PositiveIntegerField(
        default=0, help_text="...and recalled at most this many times."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "forgetting policies"

    def __str__(self) -> str:
        return f"forgetting policy of {self.tenant}"

    def clean(self) -> None:
        if self.min_weight > self.max_weight:
            raise ValidationError("The minimum weight must not exceed the maximum.")


class PromotionPolicy(models.Model):
    """A tenant's thresholds for proposing short-term items for promotion to long-term layers."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="promotion_policy")
    min_hits = models.PositiveIntegerField(
        default=3, help_text="Written again or recalled at least this often (hits + recalls)."
    )
    min_sessions = models.PositiveIntegerField(
        default=2, help_text="Seen in at least this many sessions."
    )
    min_age_hours = models.FloatField(
        default=24.0,
        validators=[MinValueValidator(0.0)],
        help_text="Alive at least this long (an explicit 'remember this' needs no age).",
    )
    min_confidence = models.FloatField(
        default=0.6, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    similar_cards = models.PositiveIntegerField(
        default=3, help_text="Nearest existing cards shown beside a long-term card proposal."
    )
    reflection_importance = models.FloatField(
        default=3.0,
        validators=[MinValueValidator(0.0)],
        help_text="Reflect once a user's new episodes add up to this much importance.",
    )
    reflection_min_items = models.PositiveIntegerField(
        default=4, help_text="A pattern needs at least this many related episodes."
    )
    reflection_similarity = models.FloatField(
        default=0.89,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Episodes sharing no entity are related when their vectors are this close.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "promotion policies"

    def __str__(self) -> str:
        return f"promotion policy of {self.tenant}"
