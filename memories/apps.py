from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories (Layers 2 and 3)"

    def ready(self) -> None:
        from memories import receivers  # noqa: F401 - connects the signal receivers
        from memories.history import receivers as history_receivers  # noqa: F401
        from memories.jobs import beat_schedule
        from memories.policies.selectors import injection_screen, redaction_patterns
        from memories.quarantine.services import quarantine_record
        from memoryproject.celery import app as celery_app
        from memoryproject.quarantine import register_hold_recorder, register_screen_source
        from memoryproject.redaction import register_tenant_patterns

        # Layer 1 writers redact with the tenant's patterns, and screen and hold what reads
        # as an instruction to the model, without importing this app.
        register_tenant_patterns(redaction_patterns)
        register_screen_source(injection_screen)
        register_hold_recorder(quarantine_record)
        # Every beat job is one Job of memories/jobs.py; beat reads its schedule from there.
        celery_app.conf.beat_schedule = beat_schedule()
