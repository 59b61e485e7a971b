"""Reads of a tenant's vocabulary entries: its word lists and its redaction patterns."""

from __future__ import annotations

import re

from memories.policies.models import VocabularyEntry
from memories.vocabulary import REDACTION_KIND, Vocabulary, compile_pattern, default_vocabulary
from profiles.models import Tenant


def vocabulary_for(*, tenant: Tenant) -> Vocabulary:
    """The default vocabulary extended with the tenant's own entries."""
    entries = list(VocabularyEntry.objects.filter(tenant=tenant).values_list("kind", "value"))
    return default_vocabulary().extended(entries) if entries else default_vocabulary()


def redaction_patterns(tenant: Tenant) -> tuple[re.Pattern[str], ...]:
    """The tenant's own redaction patterns (registered with `memoryproject.redaction`)."""
    entries = VocabularyEntry.objects.filter(tenant=tenant, kind=REDACTION_KIND)
    values = entries.values_list("value", flat=True)
    return tuple(compile_pattern(REDACTION_KIND, value) for value in values)
