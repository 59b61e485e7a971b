from django.apps import AppConfig


class ProfilesConfig(AppConfig):
    name = "profiles"
    verbose_name = "Tenants and profiles (Layer 1)"

    def ready(self) -> None:
        from profiles import receivers  # noqa: F401 - connects the signal receivers
