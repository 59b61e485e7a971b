"""Output shapes of the review workflows: deletion requests, promotions, a user's export.

The export declares its short-term items and cards with the same serializers as their own
endpoints, so one shape has one declaration.
"""

from __future__ import annotations

from rest_framework import serializers

from memories.history.serializers import HistoryEntryOutputSerializer
from memories.ltm.serializers import CardOutputSerializer
from memories.stm.serializers import StmItemOutputSerializer
from memoryproject.fields import OutputSerializer
from profiles.serializers import (
    FactOutputSerializer,
    PreferenceOutputSerializer,
    ProfileDocumentOutputSerializer,
    ProfileFieldsOutputSerializer,
    RoleOutputSerializer,
)
from transcripts.serializers import EventOutputSerializer


class VectorCheckOutputSerializer(OutputSerializer):
    """Nearest-neighbour probes with the erased cards' vectors."""

    probes = serializers.IntegerField()
    threshold = serializers.FloatField(help_text="the similarity a hit must reach to count")
    hits_of_erased = serializers.IntegerField(help_text="must be 0")
    similar_cards_of_others = serializers.IntegerField(help_text="reported, not a failure")


class TranscriptCheckOutputSerializer(OutputSerializer):
    """The erased user's sessions: tombstoned segments, no original objects left, chains whole."""

    ok = serializers.BooleanField()
    sessions = serializers.IntegerField()
    segments_not_tombstoned = serializers.IntegerField()
    erased_objects_left = serializers.IntegerField()
    chains_verified = serializers.IntegerField()


class ErasureChecksOutputSerializer(OutputSerializer):
    """The verification after the erasure; every count of `by_id` and `by_hash` must be 0."""

    ok = serializers.BooleanField()
    by_id = serializers.DictField(
        child=serializers.IntegerField(), help_text="what is still found by id, per store"
    )
    by_hash = serializers.DictField(
        child=serializers.IntegerField(), help_text="what is still found by content, per store"
    )
    same_content_elsewhere = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="the same content held by other users (or shared): reported, not a failure",
    )
    by_vector = VectorCheckOutputSerializer()
    transcripts = TranscriptCheckOutputSerializer()
    ms = serializers.IntegerField(required=False, help_text="how long the verification took")


class ReceiptOutputSerializer(OutputSerializer):
    """What the erasure removed from each store and how it was verified (`receipt_sha256` is
    the SHA-256 of this object, keys sorted)."""

    request_id = serializers.CharField()
    tenant = serializers.CharField(help_text="the tenant's slug")
    kind = serializers.CharField()
    target = serializers.CharField()
    approved_by = serializers.CharField(allow_null=True, help_text="the reviewer's username")
    approved_at = serializers.CharField(allow_null=True, help_text="ISO 8601")
    started_at = serializers.CharField(allow_null=True, help_text="ISO 8601")
    completed_at = serializers.CharField(help_text="ISO 8601")
    nothing_to_erase = serializers.BooleanField()
    stores = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="per erasure step, what it removed (counts, and `ms` it took)",
    )
    checks = ErasureChecksOutputSerializer()
    card_content_sha256 = serializers.ListField(
        child=serializers.CharField(), help_text="content hashes of the erased cards"
    )


class DeletionOutputSerializer(OutputSerializer):
    """A deletion request: its status and, once erased and verified, its receipt."""

    request_id = serializers.CharField()
    kind = serializers.CharField()
    target = serializers.CharField()
    status = serializers.CharField()
    reason = serializers.CharField()
    decision_reason = serializers.CharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField()
    last_error = serializers.CharField()
    receipt = ReceiptOutputSerializer(allow_null=True, help_text="null until verified and done")
    receipt_sha256 = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class ProposalOutputSerializer(OutputSerializer):
    """What approval would write: a preference or fact (path `postgres`: key, value, target) or a
    card (path `ltm`: the card's fields)."""

    key = serializers.CharField(required=False, help_text="postgres: the Layer 1 key")
    value = serializers.JSONField(required=False, help_text="postgres: the value (any JSON)")
    target = serializers.CharField(required=False, help_text="postgres: preference or fact")
    memory_type = serializers.CharField(required=False, help_text="ltm: the card's type")
    title = serializers.CharField(required=False, help_text="ltm")
    summary = serializers.CharField(required=False, help_text="ltm")
    content = serializers.CharField(required=False, help_text="ltm")
    entities = serializers.ListField(child=serializers.CharField(), required=False, help_text="ltm")
    tags = serializers.ListField(child=serializers.CharField(), required=False, help_text="ltm")
    importance = serializers.FloatField(required=False, help_text="ltm")
    confidence = serializers.FloatField(required=False, help_text="ltm")


class TriggersOutputSerializer(OutputSerializer):
    """The triggers that fired, each with why (a reflection's proposal has only `reflection`)."""

    hits = serializers.CharField(required=False, help_text="written and recalled often enough")
    cross_session = serializers.CharField(required=False, help_text="seen in enough sessions")
    remember = serializers.CharField(required=False, help_text="the user asked to remember it")
    stable_profile = serializers.CharField(
        required=False, help_text="fills a structured key, or a long-term preference"
    )
    reflection = serializers.CharField(
        required=False, help_text="related episodes that together make a pattern"
    )


class PromotionOutputSerializer(OutputSerializer):
    request_id = serializers.CharField()
    path = serializers.CharField()
    origin = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    memory_type = serializers.CharField()
    proposal = ProposalOutputSerializer()
    confidence = serializers.FloatField()
    triggers = TriggersOutputSerializer()
    status = serializers.CharField()
    decision_reason = serializers.CharField()
    result_ref = serializers.CharField(allow_null=True, help_text="what approval produced")
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class PromotionListOutputSerializer(OutputSerializer):
    promotions = PromotionOutputSerializer(many=True)


class ExportVersionOutputSerializer(OutputSerializer):
    key = serializers.CharField()
    value = serializers.JSONField()
    version = serializers.IntegerField()
    is_current = serializers.BooleanField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField()  # type: ignore[assignment]
    source_ids = serializers.JSONField()
    created_at = serializers.DateTimeField()


class ExportLayer1OutputSerializer(OutputSerializer):
    user_id = serializers.CharField()
    profile = ProfileFieldsOutputSerializer()
    preferences = PreferenceOutputSerializer(many=True)
    roles = RoleOutputSerializer(many=True)
    facts = FactOutputSerializer(many=True)
    preference_history = ExportVersionOutputSerializer(many=True)
    fact_history = ExportVersionOutputSerializer(many=True)


class ExportTranscriptOutputSerializer(OutputSerializer):
    session_id = serializers.CharField()
    task_id = serializers.CharField()
    event_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    events = EventOutputSerializer(many=True)


class ExportHistoryOutputSerializer(OutputSerializer):
    count = serializers.IntegerField()
    entries = HistoryEntryOutputSerializer(many=True)


class ExportPromotionOutputSerializer(OutputSerializer):
    request_id = serializers.CharField()
    path = serializers.CharField()
    status = serializers.CharField()
    proposal = ProposalOutputSerializer()
    created_at = serializers.DateTimeField()


class ExportAuditEventOutputSerializer(OutputSerializer):
    seq = serializers.IntegerField()
    action = serializers.CharField()
    actor = serializers.CharField()
    object_type = serializers.CharField()
    object_id = serializers.CharField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    sha256 = serializers.CharField()


class ExportVerificationOutputSerializer(OutputSerializer):
    request_id = serializers.CharField()
    memory_type = serializers.CharField()
    summary = serializers.CharField(help_text="the held rule, redacted")
    source_kind = serializers.CharField()
    hold_reason = serializers.CharField(
        help_text="untrusted_constraint, untrusted_preference or untrusted_profile_fact"
    )
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class ExportQuarantinedOutputSerializer(OutputSerializer):
    quarantine_id = serializers.CharField()
    path = serializers.CharField(help_text="the write path that held it")
    source_kind = serializers.CharField()
    reason = serializers.CharField(
        help_text="instruction_override, prompt_disclosure, role_change or fake_marker"
    )
    text = serializers.CharField(help_text="the held text, redacted ('' once discarded)")
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class UserExportOutputSerializer(OutputSerializer):
    """Everything held about one end user, in every layer (`user_export`)."""

    format = serializers.IntegerField()
    user_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    layer1 = ExportLayer1OutputSerializer()
    short_term = StmItemOutputSerializer(many=True)
    long_term = CardOutputSerializer(many=True)
    transcripts = ExportTranscriptOutputSerializer(many=True)
    history = ExportHistoryOutputSerializer()
    promotions = ExportPromotionOutputSerializer(many=True)
    verifications = ExportVerificationOutputSerializer(many=True)
    quarantined = ExportQuarantinedOutputSerializer(many=True)
    audit = ExportAuditEventOutputSerializer(many=True)


class UserMemoriesOutputSerializer(OutputSerializer):
    """Everything an agent may read about one end user: the profile, one page of the live
    short-term items and one page of the user's own cards."""

    user_id = serializers.CharField()
    profile = ProfileDocumentOutputSerializer(help_text="the Layer 1 document, as profile_get")
    items = StmItemOutputSerializer(many=True, help_text="live short-term items, newest first")
    next_items_before = serializers.CharField(
        allow_null=True, help_text="pass as `items_before` for the next page of items"
    )
    cards = CardOutputSerializer(many=True, help_text="the user's active cards, newest first")
    next_cards_cursor = serializers.CharField(
        allow_null=True, help_text="pass as `cards_cursor` for the next page of cards"
    )
