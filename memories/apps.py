from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from memoryproject.quarantine_meaning import MeaningScreen


def meaning_screen_source() -> MeaningScreen:
    """The quarantine's screen by meaning over the configured embedder (query embeddings are
    cached in Redis, so extraction and history screening the same event embed it once)."""
    from memories.ltm.embedder import embedder, query_vector
    from memories.quarantine.exemplars import meaning_screen_of

    return meaning_screen_of(model_name=embedder().model_name, embed=query_vector)


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories (Layers 2 and 3)"

    def ready(self) -> None:
        from memories import receivers  # noqa: F401 - connects the model signal receivers
        from memories.history.services import history_on_append
        from memories.jobs import beat_schedule
        from memories.policies.selectors import injection_screen, redaction_patterns
        from memories.quarantine.services import quarantine_record
        from memories.stores import stores_register
        from memories.write.extraction import extraction_on_append
        from memories.write.verification import profile_hold_record
        from memoryproject.celery import app as celery_app
        from memoryproject.quarantine import (
            register_hold_recorder,
            register_meaning_source,
            register_screen_source,
        )
        from memoryproject.redaction import register_tenant_patterns
        from profiles.services.profile_trust import register_verification_recorder
        from transcripts.reactions import register_append_reactions

        # Layer 1 writers redact with the tenant's patterns, screen and hold what reads as an
        # instruction to the model, and queue what an untrusted key writes, without importing
        # this app.
        register_tenant_patterns(redaction_patterns)
        register_screen_source(injection_screen)
        register_meaning_source(meaning_screen_source)
        register_hold_recorder(quarantine_record)
        # An untrusted key's free-text profile values wait in the verification queue.
        register_verification_recorder(profile_hold_record)
        # What an append sets going above Layer 0, in this order (docs/architecture.md, "The
        # path of an append"):
        register_append_reactions(
            # inside the append's transaction: the history outbox row commits with it or not
            # at all (an error here fails the append)
            within=[history_on_append],
            # after the commit: extraction queued, or its cursor moved past system events (a
            # failure is logged and left to the extraction catch-up beat job)
            after_commit=[extraction_on_append],
        )
        # Every store the jobs visit (erasure, purge, set-up, readiness, drift), in order.
        stores_register()
        # Every beat job is one Job of memories/jobs.py; beat reads its schedule from there.
        celery_app.conf.beat_schedule = beat_schedule()
