"""Where Django finds the memory layers' tables: each lives in the subpackage it belongs to.

Django registers a model when its module is imported, and imports only `memories.models` when
the app loads, so this module imports every subpackage's model module. The app label stays
`memories` (the modules are inside the app), so the migrations name the same tables. Code
imports a model from its own home (`memories.ltm.models`, ...), never from here.
"""

from memories.audit.models import AuditChange, AuditEvent  # noqa: F401
from memories.history.models import HistoryCursor, HistoryOutbox  # noqa: F401
from memories.ltm.models import ForgettingCursor, LtmCard, LtmOutbox  # noqa: F401
from memories.policies.models import (  # noqa: F401
    ForgettingPolicy,
    PromotionPolicy,
    RecallPolicy,
    VocabularyEntry,
    WritePolicy,
    # Migration 0001 names the write policy's field defaults by their old home.
    _default_ttls,
    _default_weights,
)
from memories.quarantine.models import QuarantinedText  # noqa: F401
from memories.recall.models import RecallEffectOutbox  # noqa: F401
from memories.review.models import (  # noqa: F401
    DeletionRequest,
    PromotionRequest,
    TenantPurge,
)
from memories.write.models import ExtractionCursor, VerificationRequest  # noqa: F401
