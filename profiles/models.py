"""Layer 1: the authoritative structured facts about tenants, their projects and end users."""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from profiles.domains import FACT_DOMAINS, PREFERENCE_DOMAINS, key_problem

EXTERNAL_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}"
external_id_validator = RegexValidator(
    rf"^{EXTERNAL_ID_PATTERN}$",
    "Use 1-128 letters, digits and . _ : @ - (starting with a letter or digit).",
)
slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,63}$", "Use 1-64 lower-case letters, digits, _ and -."
)


class Tenant(models.Model):
    """An organisation using the service; every other row belongs to exactly one tenant."""

    slug = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class TenantMembership(models.Model):
    """Gives a staff user a role in one tenant: tenant admin or reviewer."""

    class Role(models.TextChoices):
        TENANT_ADMIN = "tenant_admin", "Tenant admin"
        REVIEWER = "reviewer", "Reviewer"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=32, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "tenant", "role"], name="membership_unique_role"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} — {self.role} of {self.tenant}"


class Project(models.Model):
    """A tenant's project, with metadata such as its default environment."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="projects")
    key = models.CharField(max_length=64, validators=[slug_validator])
    name = models.CharField(max_length=200)
    default_env = models.CharField(max_length=64, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "key"]
        constraints = [models.UniqueConstraint(fields=["tenant", "key"], name="project_unique_key")]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.key}"


class Workspace(models.Model):
    """A working area inside a tenant (optionally of one project)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="workspaces")
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="workspaces"
    )
    key = models.CharField(max_length=64, validators=[slug_validator])
    name = models.CharField(max_length=200)
    default_env = models.CharField(max_length=64, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "key"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "key"], name="workspace_unique_key")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.key}"

    def clean(self) -> None:
        project = self.project
        if project is not None and project.tenant_id != self.tenant_id:
            raise ValidationError({"project": "The project belongs to another tenant."})


class EndUser(models.Model):
    """A user of the tenant's agents, known by the tenant's own id (e.g. `u_42`)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="end_users")
    external_id = models.CharField(max_length=128, validators=[external_id_validator])
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="enduser_unique_id")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.external_id}"


def validate_timezone(value: str) -> None:
    if value and value not in zoneinfo.available_timezones():
        raise ValidationError(f"{value!r} is not a known IANA time zone.")


class UserProfile(models.Model):
    """Who the end user is: language, answer style, time zone, display name, extras."""

    end_user = models.OneToOneField(
        EndUser, on_delete=models.CASCADE, primary_key=True, related_name="profile"
    )
    language = models.CharField(max_length=35, blank=True)
    answer_style = models.CharField(max_length=64, blank=True)
    timezone = models.CharField(max_length=64, blank=True, validators=[validate_timezone])
    display_name = models.CharField(max_length=200, blank=True)
    extras = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"profile of {self.end_user}"


class Source(models.TextChoices):
    API = "api", "API"
    ADMIN = "admin", "Admin"
    PROMOTION = "promotion", "Reviewed promotion"
    IMPORT = "import", "Import"


class VersionedValue(models.Model):
    """A keyed value kept with its history: one row per version, one current row per key."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    value = models.JSONField()
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    # Provenance: transcript message ids, short-term item ids or request ids it came from.
    source_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class UserPreference(VersionedValue):
    """An end user's preference in a domain such as `preference.answer_style`."""

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="preferences")
    confidence = models.FloatField(
        default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )

    class Meta:
        ordering = ["end_user", "key", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["end_user", "key", "version"], name="preference_unique_version"
            ),
            models.UniqueConstraint(
                fields=["end_user", "key"],
                condition=Q(is_current=True),
                name="preference_one_current",
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1),
                name="preference_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    def clean(self) -> None:
        problem = key_problem(self.key, domains=PREFERENCE_DOMAINS)
        if problem:
            raise ValidationError({"key": problem})


class UserProjectRole(models.Model):
    """An end user's role and permission scope in one project."""

    class Scope(models.TextChoices):
        READ_ONLY = "read_only", "Read only"
        READ_WRITE = "read_write", "Read and write"
        ADMIN = "admin", "Admin"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="project_roles")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="user_roles")
    role = models.CharField(max_length=64)
    permission_scope = models.CharField(
        max_length=16, choices=Scope.choices, default=Scope.READ_ONLY
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["end_user", "project"]
        constraints = [
            models.UniqueConstraint(fields=["end_user", "project"], name="role_unique_project")
        ]

    def __str__(self) -> str:
        return f"{self.end_user.external_id} is {self.role} in {self.project.key}"

    def clean(self) -> None:
        if self.end_user_id and self.end_user.tenant_id != self.tenant_id:
            raise ValidationError({"end_user": "The end user belongs to another tenant."})
        if self.project_id and self.project.tenant_id != self.tenant_id:
            raise ValidationError({"project": "The project belongs to another tenant."})


class AgentSetting(models.Model):
    """A configuration value for the tenant's agents, tenant-wide or for one project."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agent_settings")
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="agent_settings"
    )
    key = models.CharField(max_length=200)
    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "project", "key"],
                nulls_distinct=False,
                name="agentsetting_unique_key",
            )
        ]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        problem = key_problem(self.key, domains=("config",))
        if problem:
            raise ValidationError({"key": problem})
        project = self.project
        if project is not None and project.tenant_id != self.tenant_id:
            raise ValidationError({"project": "The project belongs to another tenant."})


class StableFact(VersionedValue):
    """A structured fact (e.g. `project_metadata.default_env`) for a tenant, project or user."""

    class Scope(models.TextChoices):
        TENANT = "tenant", "Tenant"
        PROJECT = "project", "Project"
        USER = "user", "End user"

    scope = models.CharField(max_length=16, choices=Scope.choices)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="facts"
    )
    end_user = models.ForeignKey(
        EndUser, on_delete=models.CASCADE, null=True, blank=True, related_name="facts"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="approved_facts",
    )
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tenant", "key", "-version"]
        indexes = [models.Index(fields=["tenant", "key"], name="fact_tenant_key")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(scope="tenant", project__isnull=True, end_user__isnull=True)
                    | Q(scope="project", project__isnull=False, end_user__isnull=True)
                    | Q(scope="user", end_user__isnull=False)
                ),
                name="fact_scope_matches_owner",
            ),
            models.UniqueConstraint(
                fields=["tenant", "scope", "project", "end_user", "key"],
                condition=Q(is_current=True),
                nulls_distinct=False,
                name="fact_one_current",
            ),
            models.UniqueConstraint(
                fields=["tenant", "scope", "project", "end_user", "key", "version"],
                nulls_distinct=False,
                name="fact_unique_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    def clean(self) -> None:
        problem = key_problem(self.key, domains=FACT_DOMAINS)
        if problem:
            raise ValidationError({"key": problem})


class ApiKey(models.Model):
    """An agent's credential for one tenant; only its SHA-256 is stored."""

    class Scope(models.TextChoices):
        READ = "read", "read"
        WRITE = "write", "write"
        ADMIN = "admin", "admin"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = ArrayField(models.CharField(max_length=16, choices=Scope.choices), default=list)
    trusted_writer = models.BooleanField(
        default=False,
        help_text="What this key proposes counts as the user's word: its constraints, "
        "preferences and profile facts become rules without a reviewer.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tenant", "-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} (mk_{self.prefix}_…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
