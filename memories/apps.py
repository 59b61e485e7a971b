from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories (Layers 2 and 3)"

    def ready(self) -> None:
        from memories import receivers  # noqa: F401 - connects the signal receivers
        from memories.history import receivers as history_receivers  # noqa: F401
        from memories.policies.selectors import redaction_patterns
        from memoryproject.redaction import register_tenant_patterns

        # Layer 1 writers redact with the tenant's patterns without importing this app.
        register_tenant_patterns(redaction_patterns)
