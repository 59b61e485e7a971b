"""Output shapes of recall: the Layer 1 blocks, the chosen memories and the injection."""

from __future__ import annotations

from rest_framework import serializers

from memories.stm.items import Trust
from memoryproject.fields import OutputSerializer


class ProfileBlockOutputSerializer(OutputSerializer):
    """Who the user is (`ContextBlocks.profile`): only the profile fields that are set."""

    language = serializers.CharField(required=False)
    answer_style = serializers.CharField(required=False)
    timezone = serializers.CharField(required=False)
    display_name = serializers.CharField(required=False)
    preferences = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        help_text="current preference values by key, as stored (any JSON); only when there are",
    )


class PermissionOutputSerializer(OutputSerializer):
    project = serializers.CharField()
    role = serializers.CharField()
    scope = serializers.CharField(help_text="the role's permission scope")


class KeyValueOutputSerializer(OutputSerializer):
    key = serializers.CharField()
    value = serializers.JSONField(help_text="as stored (any JSON)")


class StandingRuleOutputSerializer(OutputSerializer):
    """A live constraint or preference of the user's own word, not among the chosen items."""

    memory_id = serializers.CharField()
    memory_type = serializers.CharField()
    text = serializers.CharField()
    sessions = serializers.ListField(child=serializers.CharField())
    message_ids = serializers.ListField(child=serializers.CharField())


class ConstraintsBlockOutputSerializer(OutputSerializer):
    """What the user may do and what holds (`ContextBlocks.constraints`)."""

    permissions = PermissionOutputSerializer(many=True, help_text="the user's role per project")
    permission_scope = serializers.CharField(help_text="in the recalled project; '' when none")
    facts = KeyValueOutputSerializer(
        many=True, help_text="tenant, project and the user's own stable facts (the user's last)"
    )
    standing = StandingRuleOutputSerializer(
        many=True, help_text="the user's live rules and preferences, newest first"
    )


class RuntimeMetadataBlockOutputSerializer(OutputSerializer):
    """Where the agent runs (`ContextBlocks.runtime`): only the values that are set."""

    tenant = serializers.CharField(required=False, help_text="the tenant's slug")
    project = serializers.CharField(required=False)
    project_name = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    default_env = serializers.CharField(required=False)


class RecallProvenanceOutputSerializer(OutputSerializer):
    """Where a recalled memory came from; which keys are present depends on its `source`."""

    message_ids = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="redis: the events it came from"
    )
    tool_call_ids = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="redis"
    )
    task_id = serializers.CharField(required=False, help_text="redis")
    sessions = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="redis: sessions it was seen in"
    )
    said_at = serializers.CharField(
        required=False, help_text="redis: when the statement was said (ISO 8601), where known"
    )
    supersedes = serializers.CharField(
        required=False, help_text="redis: the item of an earlier statement this one replaced"
    )
    source_refs = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="ltm: `kind:id` references"
    )
    lexical_rank = serializers.IntegerField(allow_null=True, required=False, help_text="ltm")
    vector_rank = serializers.IntegerField(allow_null=True, required=False, help_text="ltm")
    event_ids = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="history: the event said"
    )
    session_id = serializers.CharField(required=False, help_text="history")
    role = serializers.CharField(required=False, help_text="history: who said it")
    occurred_at = serializers.CharField(required=False, help_text="history: ISO 8601")
    branch_ranks = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="history: the rank in each search branch that found it",
    )
    task_record = serializers.BooleanField(
        required=False, help_text="history: found as the record of the current task"
    )
    in_time_window = serializers.BooleanField(
        required=False, help_text="whether it falls in the time the query names (when it names one)"
    )
    also_said_in = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="events of an assistant's or a tool's turn that repeated it",
    )


class RecallItemOutputSerializer(OutputSerializer):
    """A memory recall chose, from any layer, with its score's terms and provenance."""

    memory_id = serializers.CharField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField(help_text="redis, ltm or history")  # type: ignore[assignment]
    source_priority = serializers.IntegerField()
    memory_type = serializers.CharField()
    domain = serializers.CharField()
    text = serializers.CharField(help_text="as injected (the summary when `shortened`)")
    shortened = serializers.BooleanField()
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField())
    weight = serializers.FloatField()
    relevance = serializers.FloatField()
    answers = serializers.FloatField(
        help_text="the estimate that it answers the query, 0 to 1 (`answer_parts`: from its "
        "words, its meaning, the current task)"
    )
    answer_parts = serializers.DictField(child=serializers.FloatField())
    canonical_fact_key = serializers.CharField()
    provenance = RecallProvenanceOutputSerializer()
    source_kind = serializers.CharField(
        help_text="whose word: user, assistant, tool, proposal (an agent's), llm, reviewer "
        "(approved or promoted by one) or import"
    )
    trust = serializers.ChoiceField(
        choices=Trust.ALL,
        help_text="untrusted memories are evidence, injected as quoted, attributed data",
    )


class LayerRouteOutputSerializer(OutputSerializer):
    asked = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField(), help_text="why it was asked")
    not_asked_because = serializers.ListField(child=serializers.CharField())


class RoutingOutputSerializer(OutputSerializer):
    """Each layer's decision with its reasons."""

    postgres = LayerRouteOutputSerializer()
    redis = LayerRouteOutputSerializer()
    ltm = LayerRouteOutputSerializer()
    history = LayerRouteOutputSerializer()
    ltm_mode = serializers.CharField(help_text="how long-term memory was searched")
    forced = serializers.BooleanField(help_text="the caller chose the layers (`layers`)")


class TimeWindowOutputSerializer(OutputSerializer):
    """[start, end) in UTC; `phrase` is the words that set it."""

    start = serializers.CharField(help_text="ISO 8601")
    end = serializers.CharField(help_text="ISO 8601")
    phrase = serializers.CharField()
    relative = serializers.BooleanField(help_text="depends on when it was asked")


class TimeQueryOutputSerializer(OutputSerializer):
    """What the query says about time; empty when recall did not read it."""

    window = TimeWindowOutputSerializer(allow_null=True, required=False)
    asks_time = serializers.BooleanField(required=False, help_text="the query asks when")


class QueryProfileOutputSerializer(OutputSerializer):
    """What recall read in the query, and the words that set each flag (`QueryProfile`)."""

    intent = serializers.CharField()
    language = serializers.CharField()
    has_reference = serializers.BooleanField()
    has_profile_request = serializers.BooleanField()
    has_similarity_request = serializers.BooleanField()
    fuzzy_history_reference = serializers.BooleanField()
    has_debug_terms = serializers.BooleanField()
    entities = serializers.ListField(child=serializers.CharField())
    active_task_id = serializers.CharField()
    session_recent = serializers.BooleanField()
    topic_shift = serializers.BooleanField()
    needs_exact_metadata = serializers.BooleanField()
    recent_entity_overlap = serializers.IntegerField()
    profile_cache_missing = serializers.BooleanField()
    profile_cache_stale = serializers.BooleanField()
    redis_result_insufficient = serializers.BooleanField()
    matched = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="by word-list kind, the words of the query found in it",
    )
    content_terms = serializers.ListField(child=serializers.CharField())
    memory_holds = serializers.BooleanField()
    holds_firmly = serializers.BooleanField()
    probe_skipped = serializers.BooleanField()
    holding_share = serializers.FloatField()
    held_terms = serializers.ListField(child=serializers.CharField())
    user_items_matched = serializers.IntegerField()
    user_items_close = serializers.IntegerField()
    related_terms = serializers.ListField(child=serializers.CharField())
    memory_close = serializers.BooleanField()
    about_user = serializers.BooleanField()
    semantic_margin = serializers.FloatField(
        help_text="the closest memory's cosine above the query's background"
    )
    own_world_score = serializers.FloatField(
        help_text="how much the query reads as one about the user's own world rather than the "
        "world at large (above 0: closer to the former)"
    )
    about_world = serializers.BooleanField(
        help_text="reads as a question about the world at large (own_world_score below 0): "
        "only words enough, or a memory very close in meaning, reach the user's memory"
    )
    own_world_memories = serializers.IntegerField(
        help_text="memories near a question about the user's own world, brought by that alone"
    )
    time = TimeQueryOutputSerializer()


class DroppedOutputSerializer(OutputSerializer):
    memory_id = serializers.CharField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField()  # type: ignore[assignment]
    reason = serializers.CharField()


class ExplainOutputSerializer(OutputSerializer):
    """How recall decided (`explain: true`)."""

    query_profile = QueryProfileOutputSerializer()
    routing = RoutingOutputSerializer()
    dropped = DroppedOutputSerializer(many=True, help_text="candidates left out, and why")
    shortened = serializers.ListField(
        child=serializers.CharField(), help_text="ids of items shown by their summary"
    )
    latency_ms = serializers.DictField(
        child=serializers.FloatField(), help_text="per layer and store, and `total`"
    )
    notes = serializers.ListField(child=serializers.CharField())


class RecallOutputSerializer(OutputSerializer):
    """Everything an agent should know before its next turn, within the token budget."""

    recall_id = serializers.CharField()
    profile_block = ProfileBlockOutputSerializer()
    constraints_block = ConstraintsBlockOutputSerializer()
    runtime_metadata_block = RuntimeMetadataBlockOutputSerializer()
    items = RecallItemOutputSerializer(many=True)
    injection_text = serializers.CharField()
    token_estimate = serializers.IntegerField()
    budget_tokens = serializers.IntegerField()
    language = serializers.CharField()
    degraded = serializers.ListField(
        child=serializers.CharField(), help_text="layers or stores skipped (down or too slow)"
    )
    explain = ExplainOutputSerializer(required=False, help_text="only with `explain: true`")
