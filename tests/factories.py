from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from profiles.models import EndUser, Project, Tenant, TenantMembership, Workspace


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.Sequence(lambda n: f"Tenant {n}")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    tenant = factory.SubFactory(TenantFactory)
    key = factory.Sequence(lambda n: f"project-{n}")
    name = factory.Sequence(lambda n: f"Project {n}")
    default_env = "staging"


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace

    tenant = factory.SubFactory(TenantFactory)
    key = factory.Sequence(lambda n: f"workspace-{n}")
    name = factory.Sequence(lambda n: f"Workspace {n}")


class EndUserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EndUser

    tenant = factory.SubFactory(TenantFactory)
    external_id = factory.Sequence(lambda n: f"u_{n}")


class StaffUserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"staff{n}")
    is_staff = True
    password = factory.PostGenerationMethodCall("set_password", "pw")

    @factory.post_generation
    def saved(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            self.save()


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TenantMembership

    user = factory.SubFactory(StaffUserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = TenantMembership.Role.TENANT_ADMIN
