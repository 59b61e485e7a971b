"""Agents' API to Layer 1: read an end user's profile; admin keys may change it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.audit.services import Actor
from memoryproject.fields import (
    JsonObjectField,
    StrictCharField,
    StrictFloatField,
    StrictSerializer,
)
from profiles.auth import request_tenant
from profiles.domains import FACT_DOMAINS, PREFERENCE_DOMAINS, key_problem
from profiles.models import UserProjectRole, slug_validator, validate_timezone
from profiles.selectors import empty_profile_document, profile_document_for
from profiles.serializers import ProfileDocumentOutputSerializer
from profiles.services.profile_patch import ProfilePatch, profile_patch_apply

MAX_PATCH_ITEMS = 100  # preferences, roles and facts together, in one PATCH
MAX_SOURCE_IDS = 200


def _domain_key_field(domains: tuple[str, ...]) -> StrictCharField:
    def check(value: str) -> None:
        problem = key_problem(value, domains=domains)
        if problem:
            raise serializers.ValidationError(problem)

    return StrictCharField(max_length=200, validators=[check])


def _unique_keys(items: list[dict[str, Any]], *, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    seen = [tuple(item.get(f) for f in fields) for item in items]
    repeated = sorted({".".join(map(str, k)) for k in seen if seen.count(k) > 1})
    if repeated:
        raise serializers.ValidationError(f"Given more than once: {', '.join(repeated)}.")
    return items


class ProfileFieldsSerializer(StrictSerializer):
    language = StrictCharField(required=False, allow_blank=True, max_length=35)
    answer_style = StrictCharField(required=False, allow_blank=True, max_length=64)
    timezone = StrictCharField(
        required=False, allow_blank=True, max_length=64, validators=[validate_timezone]
    )
    display_name = StrictCharField(required=False, allow_blank=True, max_length=200)
    extras = JsonObjectField(required=False)


class PreferenceSerializer(StrictSerializer):
    key = _domain_key_field(PREFERENCE_DOMAINS)
    value = serializers.JSONField()
    confidence = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    source_ids = serializers.ListField(
        child=StrictCharField(max_length=128), required=False, max_length=MAX_SOURCE_IDS
    )


class RoleSerializer(StrictSerializer):
    project = StrictCharField(max_length=64, validators=[slug_validator])
    role = StrictCharField(max_length=64, allow_null=True)
    permission_scope = serializers.ChoiceField(
        choices=UserProjectRole.Scope.choices, required=False
    )


class FactSerializer(StrictSerializer):
    key = _domain_key_field(FACT_DOMAINS)
    value = serializers.JSONField()
    project = StrictCharField(required=False, max_length=64, validators=[slug_validator])
    source_ids = serializers.ListField(
        child=StrictCharField(max_length=128), required=False, max_length=MAX_SOURCE_IDS
    )


class UserProfileApi(APIView):
    """GET: profile, current preferences, project roles and stable facts of one end user.

    PATCH (admin keys): change any of them in one all-or-nothing step; preferences and facts
    get a new version and keep the previous one.
    """

    required_scopes = {"GET": "read", "PATCH": "admin"}

    class ProfilePatchInputSerializer(StrictSerializer):
        # ListSerializer takes max_length; one PATCH changes at most MAX_PATCH_ITEMS in all.
        profile = ProfileFieldsSerializer(required=False)
        preferences = PreferenceSerializer(  # type: ignore[call-arg]
            many=True, required=False, max_length=MAX_PATCH_ITEMS
        )
        roles = RoleSerializer(  # type: ignore[call-arg]
            many=True, required=False, max_length=MAX_PATCH_ITEMS
        )
        facts = FactSerializer(  # type: ignore[call-arg]
            many=True, required=False, max_length=MAX_PATCH_ITEMS
        )

        def validate_preferences(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return _unique_keys(items, fields=("key",))

        def validate_roles(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return _unique_keys(items, fields=("project",))

        def validate_facts(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return _unique_keys(items, fields=("key", "project"))

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if not any(attrs.get(part) for part in ("profile", "preferences", "roles", "facts")):
                raise serializers.ValidationError(
                    "Give at least one of profile, preferences, roles, facts."
                )
            changes = sum(len(attrs.get(part, ())) for part in ("preferences", "roles", "facts"))
            if changes > MAX_PATCH_ITEMS:
                raise serializers.ValidationError(
                    f"At most {MAX_PATCH_ITEMS} preferences, roles and facts together."
                )
            return attrs

    class ProfileOutputSerializer(ProfileDocumentOutputSerializer):
        """The end user's Layer 1 document (`profile_document_for`)."""

    @extend_schema(
        operation_id="profile_get",
        summary="Get a user's profile",
        tags=["Profiles"],
        description="Profile, current preferences, project roles and stable facts of one end user.",
        responses=ProfileOutputSerializer,
    )
    def get(self, request: Request, user_id: str) -> Response:
        document = profile_document_for(tenant=request_tenant(request), external_id=user_id)
        return Response(self.ProfileOutputSerializer(document).data)

    class ProfilePatchOutputSerializer(ProfileOutputSerializer):
        quarantined = serializers.ListField(
            child=serializers.DictField(child=serializers.CharField()),
            help_text="values held for review because they read as an instruction to the "
            "model: each with its quarantine id, reason code and field (e.g. "
            "preferences.0.value); nothing of them was written",
        )
        held_for_verification = serializers.ListField(
            child=serializers.DictField(child=serializers.CharField()),
            help_text="free-text values from a key that is no trusted writer, waiting for a "
            "reviewer in the verification queue before they become the user's profile: each "
            "with its request id, status (pending, or rejected when a reviewer rejected the "
            "same value before), reason code and field; nothing of them was written",
        )

    @extend_schema(
        operation_id="profile_update",
        summary="Change a user's profile",
        tags=["Profiles"],
        description=(
            "Admin keys: change any of them in one all-or-nothing step; preferences and facts "
            "get a new version and keep the previous one. Free text is redacted. From a key "
            "that is no trusted writer, a free-text value (a sentence rather than an "
            "identifier, number or flag) waits for a reviewer (held_for_verification)."
        ),
        request=ProfilePatchInputSerializer,
        responses=ProfilePatchOutputSerializer,
    )
    def patch(self, request: Request, user_id: str) -> Response:
        serializer = self.ProfilePatchInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        tenant = request_tenant(request)
        result = profile_patch_apply(
            tenant=tenant,
            external_id=user_id,
            actor=Actor.api_key(request.auth),  # type: ignore[arg-type]
            trusted_writer=bool(getattr(request.auth, "trusted_writer", False)),
            patch=ProfilePatch(
                profile=data.get("profile", {}),
                preferences=data.get("preferences", ()),
                roles=data.get("roles", ()),
                facts=data.get("facts", ()),
            ),
        )
        if result.end_user is None:  # all of it held: an unknown user stays unknown
            document = empty_profile_document(external_id=user_id)
        else:
            document = profile_document_for(tenant=tenant, external_id=user_id)
        body = {
            **document,
            "quarantined": result.quarantined,
            "held_for_verification": result.held_for_verification,
        }
        return Response(self.ProfilePatchOutputSerializer(body).data)
