from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from wiring import views
from wiring.converters import ExternalIdConverter
from wiring.metrics_view import metrics_view

register_converter(ExternalIdConverter, "extid")

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("v1/", include("transcripts.urls")),
    path("v1/", include("profiles.urls")),
    path("v1/", include("memories.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path(
        "api/redoc/",
        SpectacularRedocView.as_view(url_name="schema", template_name="api_docs/redoc.html"),
        name="redoc",
    ),
    path("admin/", admin.site.urls),
]

handler400 = "memoryproject.errors.bad_request"
handler404 = "memoryproject.errors.not_found"
handler500 = "memoryproject.errors.server_error"
