"""End users: a tenant's users by their external id, created on first sight."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models.signals import post_save

from profiles.models import EndUser, Tenant


def end_user_get_or_create(*, tenant: Tenant, external_id: str) -> EndUser:
    """The tenant's end user with this id, created on first sight."""
    try:
        with transaction.atomic():
            end_user, _ = EndUser.objects.get_or_create(tenant=tenant, external_id=external_id)
    except IntegrityError:  # a concurrent request created it first
        end_user = EndUser.objects.get(tenant=tenant, external_id=external_id)
    return end_user


def end_users_get_or_create(*, tenant: Tenant, external_ids: Iterable[str]) -> dict[str, EndUser]:
    """The tenant's end users with these ids by id, the unknown ones created: one read, one
    insert of the missing, one read back (a user created concurrently is simply found)."""
    wanted = set(external_ids)
    found = {
        u.external_id: u for u in EndUser.objects.filter(tenant=tenant, external_id__in=wanted)
    }
    missing = sorted(wanted - found.keys())
    if missing:
        EndUser.objects.bulk_create(
            [EndUser(tenant=tenant, external_id=external_id) for external_id in missing],
            ignore_conflicts=True,
        )
        for end_user in EndUser.objects.filter(tenant=tenant, external_id__in=missing):
            found[end_user.external_id] = end_user
            # bulk_create sends no signals; receivers of a new end user (cached recall
            # context, say) hear of it as from a save.
            post_save.send(
                sender=EndUser, instance=end_user, created=True, raw=False, using="default"
            )
    return found
