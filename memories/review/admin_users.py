"""Layer 1's end-user screen, extended with what the memory layers hold.

`profiles` sits below the memory layers and cannot import them, so its end-user admin is
registered again here as a subclass: the end-user page adds the user's memory (preference and
fact history, live short-term items with delete, long-term cards, pending proposals and
deletions, export download), and "Delete" offers an erasure request instead: a row deleted
here would leave the user's data in every other store. The tenant list's action, which queues
a job, is in `memories/admin.py`, beside the jobs it queues.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from memories.audit.services import Actor
from memories.review.deletion import deletion_request
from memories.review.export import user_export
from memories.review.models import DeletionRequest
from memories.review.selectors import end_user_memory
from memories.stm.selectors import stm_item_for
from memories.stm.services import stm_item_delete
from memoryproject.errors import DomainError, StoreUnavailable
from profiles.admin import EndUserAdmin
from profiles.models import EndUser


class EndUserMemoryAdmin(EndUserAdmin):
    """An end user's page: the profile and roles, then everything memory holds about them.

    Deleting one (the page's button or the list's action) asks for an erasure request, which
    a reviewer approves in the deletion queue."""

    change_form_template = "admin/profiles/enduser/change_form.html"
    erasure_template = "admin/profiles/enduser/request_erasure.html"
    actions = ("request_erasure",)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced by the erasure request
        return actions  # type: ignore[no-any-return]

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The erasure offer for one end user (POST: the request is made)."""
        end_user = self.get_object(request, unquote(object_id))
        if end_user is None:
            raise Http404("No such end user.")
        if not self.has_delete_permission(request, end_user):
            raise PermissionDenied
        back = reverse("admin:profiles_enduser_change", args=[end_user.pk])
        return self._erasure_offer(request, [end_user], back_url=back)

    @admin.action(description="Request erasure of selected end users…")
    def request_erasure(
        self, request: HttpRequest, queryset: QuerySet[EndUser]
    ) -> HttpResponse | None:
        end_users = [
            u for u in queryset.select_related("tenant") if self.has_delete_permission(request, u)
        ]
        back = reverse("admin:profiles_enduser_changelist")
        return self._erasure_offer(request, end_users, back_url=back, action="request_erasure")

    def _erasure_offer(
        self,
        request: HttpRequest,
        end_users: list[EndUser],
        *,
        back_url: str,
        action: str = "",
    ) -> HttpResponse:
        """The page offering the erasure of `end_users`; its POST requests each (an open
        request of a user is reused) and goes to the request, or to the queue for several."""
        if request.method == "POST" and (not action or request.POST.get("post")):
            made = []
            for end_user in end_users:
                deletion, _ = deletion_request(
                    tenant=end_user.tenant,
                    kind=DeletionRequest.Kind.USER,
                    target=end_user.external_id,
                    actor=Actor.staff(request.user),
                    reason=request.POST.get("reason", "").strip(),
                )
                made.append(deletion)
            names = ", ".join(d.request_id for d in made)
            self.message_user(
                request,
                f"Erasure requested ({names}); a reviewer approves it in the deletion queue.",
                messages.SUCCESS,
            )
            if len(made) == 1:
                return HttpResponseRedirect(
                    reverse("admin:memories_deletionrequest_change", args=[made[0].pk])
                )
            return HttpResponseRedirect(reverse("admin:memories_deletionrequest_changelist"))
        open_requests = {
            (d.tenant_id, d.target): d
            for d in DeletionRequest.objects.filter(
                kind=DeletionRequest.Kind.USER,
                status__in=(DeletionRequest.Status.PENDING, DeletionRequest.Status.ERASING),
                tenant__in={u.tenant_id for u in end_users},
                target__in=[u.external_id for u in end_users],
            )
        }
        rows = [
            {"end_user": u, "open_request": open_requests.get((u.tenant_id, u.external_id))}
            for u in end_users
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Request erasure",
            "rows": rows,
            "requestable": any(row["open_request"] is None for row in rows),
            "action": action,
            "back_url": back_url,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.erasure_template, context)

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
