"""The admin site: the index shows how many requests wait for review next to each queue."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest


class MemoryAdminSite(admin.AdminSite):
    """Django's admin site, with pending-count badges and the page's full width for tables
    (no navigation sidebar, so the review queue's columns fit a 1,366 px screen)."""

    site_header = "Agent memory service"
    site_title = "Agent memory service"
    enable_nav_sidebar = False

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> Any:
        app_list = super().get_app_list(request, app_label)
        for app in app_list:
            for entry in app["models"]:
                model_admin = self._registry.get(entry["model"])
                count = getattr(model_admin, "pending_count", None)
                if count is not None:
                    entry["pending"] = count(request)
                    entry["pending_url"] = f"{entry['admin_url']}?status=pending"
        return app_list


class MemoryAdminConfig(AdminConfig):
    default_site = "memoryproject.admin_site.MemoryAdminSite"
