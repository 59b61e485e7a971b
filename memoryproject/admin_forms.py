"""Form pieces every admin screen shares: errors always land on a field the page shows, and
values are typed as text unless they look like JSON."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError


class VisibleErrorsMixin:
    """Moves errors filed under a field the page does not show (an inline's hidden foreign key,
    a field the form leaves out) to the first visible field, naming the field they concern.

    Without it Django shows only "Please correct the error below." and the error itself sits on
    a hidden input.
    """

    fields: dict[str, forms.Field]
    _errors: Any
    error_class: Any

    def full_clean(self) -> None:
        super().full_clean()  # type: ignore[misc]
        if not self._errors:
            return
        visible = [name for name, field in self.fields.items() if not field.widget.is_hidden]
        target = visible[0] if visible else NON_FIELD_ERRORS
        for name in list(self._errors):
            if name == NON_FIELD_ERRORS:
                continue
            field = self.fields.get(name)
            if field is not None and not field.widget.is_hidden:
                continue
            label = (field.label if field is not None and field.label else "") or name.replace(
                "_", " "
            ).capitalize()
            moved = [f"{label}: {message}" for message in self._errors.pop(name)]
            self._errors.setdefault(target, self.error_class()).extend(moved)


@cache
def with_visible_errors(form_class: type[forms.BaseForm]) -> type[forms.BaseForm]:
    """`form_class` with `VisibleErrorsMixin` in front (itself when it has it already)."""
    if issubclass(form_class, VisibleErrorsMixin):
        return form_class
    return type(form_class.__name__, (VisibleErrorsMixin, form_class), {})


class _Typed(str):
    """What was typed into the field, shown back as it was."""


class PlainOrJsonField(forms.JSONField):
    """A value as staff type it: JSON when it parses (numbers, lists, objects, quoted text),
    otherwise the text itself. Shows text without quotes."""

    default_error_messages = {"required": "Enter a value."}

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not text:
                if self.required:
                    raise ValidationError(self.error_messages["required"], code="required")
                return None
            try:
                return json.loads(text)
            except ValueError:
                return text
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled:
            return initial
        return _Typed(data) if isinstance(data, str) else data

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, _Typed):
            return str(value)
        if value is None:
            return ""
        if isinstance(value, str):
            # A text that would parse as JSON (say "12") is shown quoted, so it stays text.
            try:
                json.loads(value)
            except ValueError:
                return value
        return json.dumps(value, ensure_ascii=False)

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return bool(self.to_python(data) != initial)
        except ValidationError:
            return True
