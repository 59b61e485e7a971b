"""Output shapes of Layer 1 documents (`profile_document_for`), shared by the profile endpoint
and the user export."""

from __future__ import annotations

from rest_framework import serializers

from memoryproject.fields import JsonObjectField, OutputSerializer


class ProfileFieldsOutputSerializer(OutputSerializer):
    """Who the end user is; every field is '' (extras {}) for a user without a profile."""

    language = serializers.CharField()
    answer_style = serializers.CharField()
    timezone = serializers.CharField()
    display_name = serializers.CharField()
    extras = JsonObjectField(help_text="whatever else the tenant keeps about the user")
    updated_at = serializers.DateTimeField(allow_null=True)


class PreferenceOutputSerializer(OutputSerializer):
    """A current preference (`pref_<n>`)."""

    id = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField(help_text="as stored (any JSON)")
    confidence = serializers.FloatField()
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="api, admin, promotion (a reviewed one) or import"
    )
    version = serializers.IntegerField()
    updated_at = serializers.DateTimeField(help_text="when this version was written")


class RoleOutputSerializer(OutputSerializer):
    """The end user's role and permission scope in one project."""

    project = serializers.CharField()
    role = serializers.CharField()
    permission_scope = serializers.CharField(help_text="read_only, read_write or admin")


class FactOutputSerializer(OutputSerializer):
    """A current stable fact of the user (`fact_<n>`)."""

    id = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField(help_text="as stored (any JSON)")
    scope = serializers.CharField(help_text="user (the user's own facts are listed here)")
    project = serializers.CharField(allow_null=True)
    # A declared field, not `Field.source`: the serializer metaclass takes it off the class.
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="api, admin, promotion (a reviewed one) or import"
    )
    version = serializers.IntegerField()
    updated_at = serializers.DateTimeField(help_text="when this version was written")


class ProfileDocumentOutputSerializer(OutputSerializer):
    """Everything Layer 1 knows about one end user (`profile_document_for`)."""

    user_id = serializers.CharField()
    profile = ProfileFieldsOutputSerializer()
    preferences = PreferenceOutputSerializer(many=True)
    roles = RoleOutputSerializer(many=True)
    facts = FactOutputSerializer(many=True)
