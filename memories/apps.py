from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories (Layers 2 and 3)"

    def ready(self) -> None:
        from memories import receivers  # noqa: F401 - connects the signal receivers
        from memories.history import receivers as history_receivers  # noqa: F401
        from memories.policies.selectors import injection_screen, redaction_patterns
        from memories.quarantine.services import quarantine_record
        from memoryproject.quarantine import register_hold_recorder, register_screen_source
        from memoryproject.redaction import register_tenant_patterns

        # Layer 1 writers redact with the tenant's patterns, and screen and hold what reads
        # as an instruction to the model, without importing this app.
        register_tenant_patterns(redaction_patterns)
        register_screen_source(injection_screen)
        register_hold_recorder(quarantine_record)
