"""Admin screens show stored text redacted, and redact what staff type into memory or profiles.

Writes are redacted before they are stored, but rows written before a detector existed may
still hold raw values, and the transcript keeps what was said: a reviewer's screen redacts
again on display. Redacting a displayed row changes only the object in memory, never the row.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Model
from django.http import HttpRequest

from memoryproject.redaction import Redactor, Report, redactor_for

SENSITIVE_ONLY = "Holds nothing but sensitive data, which is never stored."


def _tenant_id(obj: Any) -> int | None:
    tenant_id = getattr(obj, "tenant_id", None)
    if tenant_id is None and getattr(obj, "end_user_id", None) is not None:
        tenant_id = obj.end_user.tenant_id
    return tenant_id


def redact_instance(obj: Model, fields: tuple[str, ...], redactor: Redactor) -> Model:
    """Redact the named text or JSON attributes of `obj` in place (for display only)."""
    context = str(getattr(obj, "key", "") or "")
    for name in fields:
        value = getattr(obj, name, None)
        if value:
            setattr(obj, name, redactor.value(value, path=name, report=Report(), context=context))
    return obj


class RedactedDisplayMixin:
    """For a ModelAdmin: `redacted_fields` are shown redacted on the list and the object page."""

    redacted_fields: tuple[str, ...] = ()

    def redactor(self, request: HttpRequest, obj: Any) -> Redactor:
        """The redactor of the object's tenant, built once per request."""
        cache = request.__dict__.setdefault("_redactors", {})
        tenant_id = _tenant_id(obj)
        if tenant_id not in cache:
            cache[tenant_id] = redactor_for(tenant_id) if tenant_id else redactor_for(None)
        return cache[tenant_id]  # type: ignore[no-any-return]

    def redact(self, request: HttpRequest, obj: Any) -> Any:
        return redact_instance(obj, self.redacted_fields, self.redactor(request, obj))

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        return self.redact(request, obj) if obj is not None else None

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)  # type: ignore[misc]
        for obj in changelist.result_list:  # evaluates the page once; the template reuses it
            self.redact(request, obj)
        return changelist


class RedactedFieldsForm(forms.ModelForm):
    """A model form that shows `redacted_fields` redacted and redacts what is typed into them;
    a value that is nothing but sensitive data is a form error, never saved."""

    redacted_fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        redactor = self._redactor()
        for name in self.redacted_fields:
            if self.initial.get(name):
                self.initial[name] = redactor.value(
                    self.initial[name], path=name, report=Report(), context=self._context()
                )

    def _redactor(self) -> Redactor:
        tenant_id = _tenant_id(self.instance) if self.instance.pk else None
        return redactor_for(tenant_id)

    def _context(self) -> str:
        return str(self.cleaned_data.get("key", "") if hasattr(self, "cleaned_data") else "") or (
            str(getattr(self.instance, "key", "") or "")
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        redactor = self._redactor()
        for name in self.redacted_fields:
            if cleaned.get(name) in (None, "", {}, []):
                continue
            report = Report()
            cleaned[name] = redactor.value(
                cleaned[name], path=name, report=report, context=self._context()
            )
            if report.emptied:
                self.add_error(name, SENSITIVE_ONLY)
        return cleaned
