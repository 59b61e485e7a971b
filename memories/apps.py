from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories (Layers 2 and 3)"

    def ready(self) -> None:
        from memories import receivers  # noqa: F401 - connects the signal receivers
