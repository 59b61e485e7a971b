"""A user's turn appended through the API, its extraction run as it commits."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient


def say(client: APIClient, session: str, event_id: str, text: str, at: str, capture) -> None:
    """u_1 says `text` in `session` at `at`; `capture` is django_capture_on_commit_callbacks."""
    events = [{"id": event_id, "role": "user", "content": text, "created_at": at}]
    with capture(execute=True):
        response = client.post(
            reverse("transcripts:events", kwargs={"session_id": session}),
            {"user_id": "u_1", "events": events},
            format="json",
        )
    assert response.status_code == 201, response.json()
