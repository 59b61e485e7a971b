"""Celery application: the worker and beat load their configuration from Django settings."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
