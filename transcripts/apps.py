from django.apps import AppConfig


class TranscriptsConfig(AppConfig):
    name = "transcripts"
    verbose_name = "Raw transcripts (Layer 0)"
