"""Layer 1's end-user screen, extended with what the memory layers hold.

`profiles` sits below the memory layers and cannot import them, so its end-user admin is
registered again here as a subclass: the end-user page adds the user's memory (preference and
fact history, live short-term items with delete, long-term cards, pending proposals and
deletions, export download). The tenant list's action, which queues a job, is in
`memories/admin.py`, beside the jobs it queues.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.urls import URLPattern, path, reverse

from memories.audit.services import Actor
from memories.review.export import user_export
from memories.review.selectors import end_user_memory
from memories.stm.selectors import stm_item_for
from memories.stm.services import stm_item_delete
from memoryproject.errors import DomainError, StoreUnavailable
from profiles.admin import EndUserAdmin
from profiles.models import EndUser


class EndUserMemoryAdmin(EndUserAdmin):
    """An end user's page: the profile and roles, then everything memory holds about them."""

    change_form_template = "admin/profiles/enduser/change_form.html"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        end_user = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if end_user is not None and self.has_view_permission(request, end_user):
            extra["memory"] = end_user_memory(end_user=end_user)
            extra["export_url"] = reverse("admin:profiles_enduser_export", args=[end_user.pk])
        return super().change_view(request, object_id, form_url, extra)

    def _end_user(self, request: HttpRequest, object_id: str) -> EndUser:
        end_user = self.get_object(request, object_id)
        if end_user is None:
            raise Http404("No such end user.")
        if not self.has_view_permission(request, end_user):
            raise PermissionDenied
        return end_user  # type: ignore[no-any-return]

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Everything held about the user, as `GET /v1/users/{id}/export` answers it but with
        the transcripts redacted too: staff see no raw value."""
        end_user = self._end_user(request, object_id)
        document = user_export(tenant=end_user.tenant, user_id=end_user.external_id)
        body = json.dumps(document, indent=2, ensure_ascii=False, default=str)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="export-{end_user.tenant.slug}-{end_user.pk}.json"'
        )
        return response

    def stm_delete_view(self, request: HttpRequest, object_id: str, item_id: str) -> HttpResponse:
        """Delete one of the user's live short-term items (POST), as `DELETE /v1/memories/{id}`."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        end_user = self._end_user(request, object_id)
        if not self.has_change_permission(request, end_user):
            raise PermissionDenied
        back = reverse("admin:profiles_enduser_change", args=[end_user.pk]) + "#stm-items"
        try:
            item = stm_item_for(tenant=end_user.tenant, item_id=item_id)
            if item.end_user_id != end_user.pk:
                raise Http404("No such item of this user.")
            stm_item_delete(
                tenant=end_user.tenant, item_id=item_id, actor=Actor.staff(request.user)
            )
        except (DomainError, StoreUnavailable) as exc:
            self.message_user(request, f"Not deleted: {exc}", messages.ERROR)
            return HttpResponseRedirect(back)
        self.message_user(request, f"Deleted short-term item {item_id}.", messages.SUCCESS)
        return HttpResponseRedirect(back)

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/export.json",
                self.admin_site.admin_view(self.export_view),
                name="profiles_enduser_export",
            ),
            path(
                "<path:object_id>/stm/<str:item_id>/delete/",
                self.admin_site.admin_view(self.stm_delete_view),
                name="profiles_enduser_stm_delete",
            ),
        ]
        return [*own, *super().get_urls()]


admin.site.unregister(EndUser)
admin.site.register(EndUser, EndUserMemoryAdmin)
