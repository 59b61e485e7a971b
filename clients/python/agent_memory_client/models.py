"""Typed request and response shapes of the service's API (v1).

TypedDicts, so a response is the decoded JSON itself, with types for editors and type checkers.
Request shapes list what the service accepts (NotRequired: it has a default) and are closed,
as the service refuses keys it does not know. The SDK's tests check every shape against the
service's OpenAPI schema (`/api/schema/`), against the TypedDicts a standard generator makes from
it (type-checked both ways with mypy), and against real answers.
"""

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

Role = Literal["user", "assistant", "tool", "system"]
StmMemoryType = Literal["fact", "decision", "hypothesis", "observation", "constraint", "preference"]
LtmMemoryType = Literal["semantic_fact", "episodic_case", "procedure", "preference", "knowledge"]
Layer = Literal["postgres", "redis", "ltm", "history"]
Trust = Literal["trusted", "untrusted"]
SearchMode = Literal["lexical", "vector", "hybrid"]
CardStatus = Literal["active", "archived"]
ReviewStatus = Literal["pending", "approved", "rejected"]
PermissionScope = Literal["read_only", "read_write", "admin"]


# --- transcripts ----------------------------------------------------------------------------


class EventIn(TypedDict, closed=True):
    """One event to append; give `id` (the SDK does when it is missing) so a retry is safe."""

    role: Role
    content: str
    id: NotRequired[str]
    tool_call_id: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]
    created_at: NotRequired[str]  # ISO 8601; the service's receive time when left out


class AppendRequest(TypedDict, closed=True):
    user_id: str
    events: list[EventIn]
    task_id: NotRequired[str]


class AppendedEvent(TypedDict):
    seq: int
    id: str


class AppendResponse(TypedDict):
    session_id: str
    created: bool  # False: a retry of an append already stored; nothing was written
    event_count: int
    head_hash: str
    events: list[AppendedEvent]


class ReplayQuery(TypedDict, total=False):
    after: int
    limit: int


class EventOut(TypedDict):
    seq: int
    id: str
    role: str
    content: str
    tool_call_id: str
    metadata: dict[str, Any]
    created_at: str
    received_at: str


class SessionEvent(EventOut):
    session_id: str


class ReplayResponse(TypedDict):
    session_id: str
    user_id: str
    task_id: str
    event_count: int
    next_after: int
    has_more: bool
    events: list[EventOut]


class VerifyProblem(TypedDict):
    segment: int
    path: str
    reason: str


class VerifyResponse(TypedDict):
    session_id: str
    ok: bool
    segments_checked: int
    events_checked: int
    problems: list[VerifyProblem]


# --- profiles -------------------------------------------------------------------------------


class ProfileFields(TypedDict, total=False, closed=True):
    language: str
    answer_style: str
    timezone: str
    display_name: str
    extras: dict[str, Any]


class PreferenceIn(TypedDict, closed=True):
    key: str
    value: Any
    confidence: NotRequired[float]
    source_ids: NotRequired[list[str]]


class RoleIn(TypedDict, closed=True):
    project: str
    role: str | None
    permission_scope: NotRequired[PermissionScope]


class FactIn(TypedDict, closed=True):
    key: str
    value: Any
    project: NotRequired[str]
    source_ids: NotRequired[list[str]]


class ProfilePatch(TypedDict, total=False, closed=True):
    profile: ProfileFields
    preferences: list[PreferenceIn]
    roles: list[RoleIn]
    facts: list[FactIn]


class ProfileOut(TypedDict):
    """Every field is "" (extras {}) for a user without a profile."""

    language: str
    answer_style: str
    timezone: str
    display_name: str
    extras: dict[str, Any]
    updated_at: str | None


class PreferenceOut(TypedDict):
    id: str  # pref_<n>
    key: str
    value: Any  # as stored
    confidence: float
    source: str  # api, admin, promotion, import
    version: int
    updated_at: str


class RoleOut(TypedDict):
    project: str
    role: str
    permission_scope: str  # read_only, read_write, admin


class FactOut(TypedDict):
    id: str  # fact_<n>
    key: str
    value: Any  # as stored
    scope: str
    project: str | None
    source: str  # api, admin, promotion, import
    version: int
    updated_at: str


class ProfileResponse(TypedDict):
    user_id: str
    profile: ProfileOut
    preferences: list[PreferenceOut]
    roles: list[RoleOut]
    facts: list[FactOut]


class ProfilePatchResponse(ProfileResponse):
    # Values held for review because they read as an instruction to the model (each with its
    # quarantine `id`, `reason` code and `field`, e.g. "preferences.0.value"); not written.
    quarantined: list[dict[str, str]]
    # Free-text values from a key that is no trusted writer, waiting for a reviewer (each with
    # its `request_id`, `status` pending or rejected, `reason` code and `field`); not written.
    held_for_verification: list[dict[str, str]]


# --- short-term memory ----------------------------------------------------------------------


class ProposalSource(TypedDict, total=False, closed=True):
    kind: str
    message_ids: list[str]
    tool_call_ids: list[str]


class Proposal(TypedDict, closed=True):
    user_id: str
    session_id: str
    memory_type: StmMemoryType
    summary: str
    task_id: NotRequired[str]
    subtype: NotRequired[str]
    detail: NotRequired[dict[str, Any]]
    entities: NotRequired[list[str]]
    tags: NotRequired[list[str]]
    source: NotRequired[ProposalSource]
    confidence: NotRequired[float]
    importance: NotRequired[float]
    canonical_fact_key: NotRequired[str]
    fact_value: NotRequired[str]
    verified: NotRequired[bool]
    remember: NotRequired[bool]
    ttl_minutes: NotRequired[int]


class ProposalsRequest(TypedDict, closed=True):
    proposals: list[Proposal]


class Quarantine(TypedDict):
    """A write held for review because it reads as an instruction to the model."""

    id: str  # "" in a dry run
    reason: str  # instruction_override | prompt_disclosure | role_change | fake_marker
    field: str


class WriteProfile(TypedDict):
    """What the write policy read in a proposal."""

    is_verified: bool
    is_stable_for_current_task: bool
    is_user_constraint: bool
    is_decision: bool
    is_preference: bool
    novelty: float
    confidence: float
    estimated_ttl_minutes: int
    duplicate: bool
    transient: bool
    raw_unstructured_blob: bool


class ProposalResult(TypedDict):
    index: int
    outcome: str
    item_id: str | None
    version: int | None
    superseded_id: str | None
    redacted: list[str]
    source_kind: str  # proposal (an agent's), user, assistant, tool, llm, reviewer, import
    trust: Trust
    held_for_verification: bool  # an untrusted rule, stored for a reviewer, not written
    hold_reason: str  # untrusted_constraint | untrusted_preference | untrusted_profile_fact | ""
    verification_id: str | None
    quarantine: Quarantine | None
    accepted: bool
    score: float
    threshold_breakdown: dict[str, float]
    write_profile: WriteProfile
    ttl_minutes: int
    refusal: str
    policy_version: int
    repeat: bool


class ProposalsResponse(TypedDict):
    dry_run: bool
    results: list[ProposalResult]


class StmQuery(TypedDict):
    user_id: str
    session_id: NotRequired[str]
    task_id: NotRequired[str]
    type: NotRequired[StmMemoryType]
    entity: NotRequired[str]
    before: NotRequired[float]
    limit: NotRequired[int]


class StmSource(TypedDict):
    kind: NotRequired[str]  # source kinds, "+"-joined for a merged item
    message_ids: list[str]
    tool_call_ids: list[str]


class StmItem(TypedDict):
    id: str
    user_id: str
    session_id: str
    task_id: str
    memory_type: str
    subtype: str
    summary: str
    detail: dict[str, Any]
    entities: list[str]
    tags: list[str]
    source: StmSource
    confidence: float
    importance: float
    created_at: str
    updated_at: str
    last_access_at: str
    expires_at: str
    fingerprint: str
    canonical_fact_key: str
    fact_value: str
    version: int
    status: str
    hit_count: int
    sessions: list[str]
    supersedes: str  # "" when it supersedes nothing
    superseded_by: str
    verified: bool
    remember: bool
    source_kind: str
    trust: Trust  # only a trusted item is injected as a rule


class StmItemWithProvenance(StmItem):
    provenance: list[SessionEvent]  # the transcript events it came from, redacted


class StmPage(TypedDict):
    items: list[StmItem]
    next_before: str | None  # pass back as `before` for the next page


class MemoryUpdate(TypedDict, total=False, closed=True):
    """The fields of a short-term item an edit changes (at least one)."""

    summary: str
    entities: list[str]
    tags: list[str]
    importance: float
    confidence: float
    ttl_minutes: int
    expected_version: int  # apply only to this version (409 otherwise)


class MemoryUpdateResponse(TypedDict):
    # updated | unchanged | quarantined | held_for_verification; only `updated` changed it
    outcome: Literal["updated", "unchanged", "quarantined", "held_for_verification"]
    item: StmItem  # as it is now
    redacted: list[str]
    quarantine: Quarantine | None
    hold_reason: str
    verification_id: str | None


# --- long-term memory -----------------------------------------------------------------------


class CardIn(TypedDict, closed=True):
    memory_type: LtmMemoryType
    summary: str
    id: NotRequired[str]
    user_id: NotRequired[str]
    project: NotRequired[str]
    title: NotRequired[str]
    content: NotRequired[str]
    entities: NotRequired[list[str]]
    tags: NotRequired[list[str]]
    source_refs: NotRequired[dict[str, list[str]]]
    importance: NotRequired[float]
    confidence: NotRequired[float]
    occurred_at: NotRequired[str | None]  # ISO 8601: when what the card remembers happened


class CardImportRequest(TypedDict, closed=True):
    cards: list[CardIn]


class ImportedCard(TypedDict):
    memory_id: str | None  # None when quarantined
    version: int | None
    outcome: str  # created | updated | unchanged | quarantined
    quarantine: Quarantine | None


class CardImportResponse(TypedDict):
    cards: list[ImportedCard]


class Card(TypedDict):
    memory_id: str
    external_id: str | None
    user_id: str | None
    project: str | None
    memory_type: str
    title: str
    summary: str
    content: str
    entities: list[str]
    tags: list[str]
    source_type: str
    source_refs: dict[str, list[str]]
    importance: float
    confidence: float
    access_count: int
    status: str
    version: int
    created_at: str
    updated_at: str
    occurred_at: str | None


class CardsQuery(TypedDict, total=False):
    user_id: str  # one user's cards (404 for a user the tenant does not have)
    shared: bool  # only the tenant's cards of no user
    status: CardStatus
    memory_type: LtmMemoryType
    cursor: int
    limit: int


class CardPage(TypedDict):
    cards: list[Card]
    next_cursor: str | None  # pass back as `cursor` for the next page


class CardUpdate(TypedDict, total=False, closed=True):
    """The fields of a card an edit changes (at least one)."""

    title: str
    summary: str
    content: str
    entities: list[str]
    tags: list[str]
    importance: float
    confidence: float
    occurred_at: str | None  # ISO 8601; null clears it
    expected_version: int  # apply only to this version (409 otherwise)


class CardUpdateResponse(TypedDict):
    outcome: Literal["updated", "unchanged", "quarantined"]
    card: Card  # as it is now
    redacted: list[str]  # the fields whose sensitive data was replaced
    quarantine: Quarantine | None


class LtmSearchRequest(TypedDict, closed=True):
    query: str
    mode: NotRequired[SearchMode]
    k: NotRequired[int]
    user_id: NotRequired[str]
    project: NotRequired[str]
    memory_types: NotRequired[list[LtmMemoryType]]
    statuses: NotRequired[list[CardStatus]]


class LtmHit(TypedDict):
    memory_id: str
    score: float
    lexical_rank: int | None
    lexical_score: float | None
    vector_rank: int | None
    vector_score: float | None
    title: str
    summary: str
    memory_type: str
    user_id: str | None


class LtmSearchResponse(TypedDict):
    mode: str
    degraded: bool
    failed_branches: list[str]
    hits: list[LtmHit]


# --- recall and compression -----------------------------------------------------------------


class RecallRequest(TypedDict, closed=True):
    user_id: str
    session_id: str
    query: str
    task_id: NotRequired[str]
    project: NotRequired[str]
    workspace: NotRequired[str]
    budget_tokens: NotRequired[int]
    k: NotRequired[int]
    layers: NotRequired[list[Layer]]
    explain: NotRequired[bool]
    user_stated_only: NotRequired[bool]  # leave out what no trusted source said
    cutoff: NotRequired[bool]  # false: the top k, whether or not they answer the query


class RecallProvenance(TypedDict, total=False):
    """Where a recalled memory came from; the keys present depend on its layer."""

    message_ids: list[str]  # redis
    tool_call_ids: list[str]  # redis
    task_id: str  # redis
    sessions: list[str]  # redis
    said_at: str  # redis: when the statement was said (ISO 8601), where known
    supersedes: str  # redis: the item of an earlier statement this one replaced
    source_refs: list[str]  # ltm
    lexical_rank: int | None  # ltm
    vector_rank: int | None  # ltm
    event_ids: list[str]  # history
    session_id: str  # history
    role: str  # history
    occurred_at: str  # history
    branch_ranks: dict[str, int]  # history
    task_record: bool  # history: the record of the current task
    in_time_window: bool  # when the query names a time
    also_said_in: list[str]  # events of an assistant's or tool's turn that repeated it


class RecallItem(TypedDict):
    memory_id: str
    source: str  # the layer: postgres, redis, ltm or history
    source_priority: int
    memory_type: str
    domain: str
    text: str
    shortened: bool
    score: float
    score_parts: dict[str, float]
    weight: float
    relevance: float
    answers: float  # the estimate that it answers the query, 0 to 1
    answer_parts: dict[str, float]
    canonical_fact_key: str
    provenance: RecallProvenance
    source_kind: str
    trust: Trust  # untrusted memories are evidence, injected as quoted, attributed data


class ProfileBlock(TypedDict, total=False):
    """Only the profile fields that are set."""

    language: str
    answer_style: str
    timezone: str
    display_name: str
    preferences: dict[str, Any]  # current values by key, as stored


class Permission(TypedDict):
    project: str
    role: str
    scope: str


class KeyValue(TypedDict):
    key: str
    value: Any


class StandingRule(TypedDict):
    memory_id: str
    memory_type: str
    text: str
    sessions: list[str]
    message_ids: list[str]


class ConstraintsBlock(TypedDict):
    permissions: list[Permission]
    permission_scope: str  # in the recalled project; "" when none
    facts: list[KeyValue]
    standing: list[StandingRule]  # the user's live rules and preferences


class RuntimeMetadataBlock(TypedDict, total=False):
    """Only the values that are set."""

    tenant: str
    project: str
    project_name: str
    workspace: str
    default_env: str


class TimeWindow(TypedDict):
    start: str
    end: str
    phrase: str
    relative: bool


class TimeQuery(TypedDict, total=False):
    window: TimeWindow | None
    asks_time: bool


class QueryProfile(TypedDict):
    intent: str
    language: str
    has_reference: bool
    has_profile_request: bool
    has_similarity_request: bool
    fuzzy_history_reference: bool
    has_debug_terms: bool
    entities: list[str]
    active_task_id: str
    session_recent: bool
    topic_shift: bool
    needs_exact_metadata: bool
    recent_entity_overlap: int
    profile_cache_missing: bool
    profile_cache_stale: bool
    redis_result_insufficient: bool
    matched: dict[str, list[str]]
    content_terms: list[str]
    memory_holds: bool
    holds_firmly: bool
    probe_skipped: bool
    holding_share: float
    held_terms: list[str]
    user_items_matched: int
    user_items_close: int
    related_terms: list[str]
    memory_close: bool
    about_user: bool
    semantic_margin: float
    own_world_score: float
    about_world: bool
    own_world_memories: int
    time: TimeQuery


class LayerRoute(TypedDict):
    asked: bool
    reasons: list[str]
    not_asked_because: list[str]


class Routing(TypedDict):
    postgres: LayerRoute
    redis: LayerRoute
    ltm: LayerRoute
    history: LayerRoute
    ltm_mode: str
    forced: bool


class Dropped(TypedDict):
    memory_id: str
    source: str
    reason: str


class Explain(TypedDict):
    query_profile: QueryProfile
    routing: Routing
    dropped: list[Dropped]
    shortened: list[str]
    latency_ms: dict[str, float]
    notes: list[str]


class RecallResponse(TypedDict):
    recall_id: str
    profile_block: ProfileBlock
    constraints_block: ConstraintsBlock
    runtime_metadata_block: RuntimeMetadataBlock
    items: list[RecallItem]
    injection_text: str
    token_estimate: int
    budget_tokens: int
    language: str
    degraded: list[str]
    explain: NotRequired[Explain]  # with `explain: true`


class CompressRequest(TypedDict, closed=True):
    budget_tokens: int
    user_id: NotRequired[str]


class CompressTokens(TypedDict):
    budget: int
    before: int
    after: int
    near_field: int


class CompressMessage(TypedDict):
    seq: int
    id: str
    role: str
    tool_call_id: str
    tool: str
    state: str
    near_field: bool
    content: str | None
    tokens: int


class CompressStubbed(TypedDict):
    id: str
    seq: int
    tool: str
    tool_call_id: str
    reason: str
    dependency: str | None


class CompressFolded(TypedDict):
    id: str
    seq: int
    role: str
    reason: str
    dependency: str | None


class CompressOmitted(TypedDict):
    id: str
    seq: int | None
    reason: str


class CompressToolResult(TypedDict):
    id: str
    seq: int
    dependency: str
    current: bool
    reasons: list[str]
    consumers: list[str]
    digested_by: list[str]


class CompressSummaryLine(TypedDict):
    text: str
    refs: list[str]  # the event ids it cites


class CompressSummaryCovers(TypedDict):
    events: int
    first_seq: int
    last_seq: int


class CompressSummary(TypedDict):
    sections: dict[str, list[CompressSummaryLine]]
    covers: CompressSummaryCovers
    dropped_lines: int
    summariser: str


class CompressSkipped(TypedDict):
    first_seq: int
    last_seq: int
    reason: str


class CompressResponse(TypedDict):
    session_id: str
    user_id: str
    task_id: str
    context: str
    messages: list[CompressMessage]
    summary: CompressSummary | None
    tokens: CompressTokens
    within_budget: bool
    near_field: list[str]
    stubbed: list[CompressStubbed]
    folded: list[CompressFolded]
    omitted: list[CompressOmitted]
    tool_results: list[CompressToolResult]
    skipped: CompressSkipped | None
    language: str
    notes: list[str]
    degraded: list[str]


# --- review ---------------------------------------------------------------------------------


class DeletionRequestIn(TypedDict, total=False, closed=True):
    reason: str


class VectorCheck(TypedDict):
    probes: int
    threshold: float
    hits_of_erased: int  # must be 0
    similar_cards_of_others: int


class TranscriptCheck(TypedDict):
    ok: bool
    sessions: int
    segments_not_tombstoned: int
    erased_objects_left: int
    chains_verified: int


class ErasureChecks(TypedDict):
    ok: bool
    by_id: dict[str, int]  # per store; must all be 0
    by_hash: dict[str, int]  # per store; must all be 0
    same_content_elsewhere: dict[str, int]
    by_vector: VectorCheck
    transcripts: TranscriptCheck
    ms: NotRequired[int]


class Receipt(TypedDict):
    """What an erasure removed and how it was verified; `receipt_sha256` hashes it."""

    request_id: str
    tenant: str
    kind: str
    target: str
    approved_by: str | None
    approved_at: str | None
    started_at: str | None
    completed_at: str
    nothing_to_erase: bool
    stores: dict[str, dict[str, int]]  # per erasure step, its counts and `ms`
    checks: ErasureChecks
    card_content_sha256: list[str]


class Deletion(TypedDict):
    request_id: str
    kind: str
    target: str
    status: str  # pending, rejected, erasing, done
    reason: str
    decision_reason: str
    decided_at: str | None
    completed_at: str | None
    attempts: int
    last_error: str
    receipt: Receipt | None
    receipt_sha256: str | None
    created_at: str


class PromotionsQuery(TypedDict, total=False):
    status: ReviewStatus
    limit: int


class PromotionProposal(TypedDict, total=False):
    """Path postgres: key, value, target; path ltm: the card's fields."""

    key: str
    value: Any
    target: str  # preference or fact
    memory_type: str
    title: str
    summary: str
    content: str
    entities: list[str]
    tags: list[str]
    importance: float
    confidence: float


class Triggers(TypedDict, total=False):
    """The triggers that fired, each with why."""

    hits: str
    cross_session: str
    remember: str
    stable_profile: str
    reflection: str


class Promotion(TypedDict):
    request_id: str
    path: str
    origin: str
    user_id: str | None
    memory_type: str
    proposal: PromotionProposal
    confidence: float
    triggers: Triggers
    status: str
    decision_reason: str
    result_ref: str | None
    created_at: str
    decided_at: str | None


class PromotionsResponse(TypedDict):
    promotions: list[Promotion]


class ExportVersion(TypedDict):
    key: str
    value: Any
    version: int
    is_current: bool
    source: str
    source_ids: Any
    created_at: str


class ExportLayer1(TypedDict):
    user_id: str
    profile: ProfileOut
    preferences: list[PreferenceOut]
    roles: list[RoleOut]
    facts: list[FactOut]
    preference_history: list[ExportVersion]
    fact_history: list[ExportVersion]


class ExportTranscript(TypedDict):
    session_id: str
    task_id: str
    event_count: int
    created_at: str
    events: list[EventOut]


class HistoryEntry(TypedDict):
    entry_id: str
    event_id: str
    session_id: str
    role: str
    occurred_at: str
    text: str


class ExportHistory(TypedDict):
    count: int
    entries: list[HistoryEntry]


class ExportPromotion(TypedDict):
    request_id: str
    path: str
    status: str
    proposal: PromotionProposal
    created_at: str


class ExportAuditEvent(TypedDict):
    seq: int
    action: str
    actor: str
    object_type: str
    object_id: str
    reason: str
    created_at: str
    sha256: str


class ExportVerification(TypedDict):
    request_id: str
    memory_type: str
    summary: str
    source_kind: str
    hold_reason: str
    status: str
    created_at: str


class ExportQuarantined(TypedDict):
    quarantine_id: str
    path: str
    source_kind: str
    reason: str
    text: str
    status: str
    created_at: str


class UserExport(TypedDict):
    format: int
    user_id: str
    created_at: str
    layer1: ExportLayer1
    short_term: list[StmItem]
    long_term: list[Card]
    transcripts: list[ExportTranscript]
    history: ExportHistory
    promotions: list[ExportPromotion]
    verifications: list[ExportVerification]  # untrusted rules waiting for a reviewer
    quarantined: list[ExportQuarantined]  # texts held as instructions to the model
    audit: list[ExportAuditEvent]


# --- everything about a user ----------------------------------------------------------------


class UserMemoriesQuery(TypedDict, total=False):
    limit: int  # per part
    items_before: float
    cards_cursor: int


class UserMemories(TypedDict):
    user_id: str
    profile: ProfileResponse
    items: list[StmItem]
    next_items_before: str | None  # pass back as `items_before`
    cards: list[Card]
    next_cards_cursor: str | None  # pass back as `cards_cursor`
