"""Reads of a tenant's vocabulary entries: its word lists, its redaction patterns and its
quarantine screen."""

from __future__ import annotations

import re

from memories.policies.models import VocabularyEntry
from memories.vocabulary import (
    REDACTION_KIND,
    Vocabulary,
    compile_pattern,
    default_vocabulary,
    screen_of,
)
from memoryproject.quarantine import InjectionScreen
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


def injection_screen(tenant: Tenant | int, *, by_meaning: bool = False) -> InjectionScreen:
    """The tenant's quarantine screen: the default injection patterns and its own, with the
    screen by meaning when asked (registered with `memoryproject.quarantine`)."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    entries = list(
        VocabularyEntry.objects.filter(
            tenant_id=tenant_id, kind__startswith="injection_"
        ).values_list("kind", "value")
    )
    vocabulary = default_vocabulary().extended(entries) if entries else default_vocabulary()
    return screen_of(vocabulary, by_meaning=by_meaning)
