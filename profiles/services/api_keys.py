"""API keys: creation, scopes, revocation, cached lookups and the record of their use."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from memoryproject.errors import Conflict, Invalid
from profiles.models import ApiKey, Tenant
from profiles.selectors import api_key_hash
from profiles.services.audit import staff_audit

logger = logging.getLogger(__name__)


LAST_USED_PRECISION = timedelta(seconds=60)


def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: Iterable[str],
    created_by: User | None = None,
    trusted_writer: bool = False,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is shown once and never stored;
    a key a staff user creates (`created_by`) is an audit event."""
    scope_list = _valid_scopes(scopes)
    prefix = secrets.token_hex(6)
    secret = f"mk_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        key_hash=api_key_hash(secret),
        scopes=scope_list,
        trusted_writer=trusted_writer,
        created_by=created_by,
    )
    if created_by is not None:  # keys made by commands and tests are not staff changes
        staff_audit(
            tenant=tenant,
            action="create",
            staff=created_by,
            object_type="api_key",
            object_id=f"api_key:{api_key.pk}",
            after=_key_state(api_key),
        )
    return api_key, secret


def _key_state(api_key: ApiKey) -> dict[str, Any]:
    return {
        "name": api_key.name,
        "prefix": api_key.prefix,
        "scopes": list(api_key.scopes),
        "trusted_writer": api_key.trusted_writer,
        "revoked": api_key.revoked_at is not None,
    }


def _valid_scopes(scopes: Iterable[str]) -> list[str]:
    scope_list = sorted(set(scopes))
    unknown = set(scope_list) - set(ApiKey.Scope.values)
    if unknown or not scope_list:
        raise Invalid(
            "Scopes must be a non-empty subset of read, write, admin.",
            fields={"scopes": [f"Unknown scope(s): {', '.join(sorted(unknown)) or 'none given'}"]},
        )
    return scope_list


def api_key_cache_forget(*, key_hashes: Iterable[str]) -> None:
    """Drop the cached lookups of these keys as soon as the current transaction commits.

    Every change that can narrow or end a key (revocation, new scopes, its tenant changed,
    deactivated or deleted) goes through a service here that calls this, so the very next
    request with the key is authenticated from PostgreSQL. Signals would not do: queryset
    updates and bulk deletes skip them.
    """
    hashes = sorted(set(key_hashes))
    if not hashes:
        return
    from profiles.key_cache import api_key_cache

    transaction.on_commit(lambda: api_key_cache().forget(hashes))


def api_keys_revoke(*, keys: QuerySet[ApiKey], staff: Any = None) -> int:
    """Revoke every active key of `keys` in one step; later requests with them answer 401.

    Returns how many keys were revoked (keys revoked before are left as they are). With
    `staff`, each revocation is an audit event of its tenant.
    """
    with transaction.atomic():
        active = list(
            ApiKey.objects.select_for_update().filter(
                pk__in=keys.values("pk"), revoked_at__isnull=True
            )
        )
        hashes = [key.key_hash for key in active]
        revoked = ApiKey.objects.filter(key_hash__in=hashes).update(revoked_at=timezone.now())
        api_key_cache_forget(key_hashes=hashes)
        for key in active if staff is not None else ():
            before = _key_state(key)
            staff_audit(
                tenant=key.tenant_id,
                action="revoke",
                staff=staff,
                object_type="api_key",
                object_id=f"api_key:{key.pk}",
                before=before,
                after={**before, "revoked": True},
            )
    return revoked


def api_key_revoke(*, api_key: ApiKey, staff: Any = None) -> ApiKey:
    """Revoke a key at once; later requests with it answer 401."""
    api_keys_revoke(keys=ApiKey.objects.filter(pk=api_key.pk), staff=staff)
    api_key.refresh_from_db(fields=["revoked_at"])
    return api_key


def api_key_update(
    *,
    api_key: ApiKey,
    name: str,
    scopes: Iterable[str],
    staff: Any = None,
    trusted_writer: bool | None = None,
) -> ApiKey:
    """Rename a key, change its scopes or whether it is a trusted writer; each change holds
    from the key's next request on."""
    scope_list = _valid_scopes(scopes)
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        if locked.revoked_at is not None:
            raise Conflict("A revoked key cannot be changed.")
        before = _key_state(locked)
        api_key.name, api_key.scopes = name, scope_list
        if trusted_writer is not None:
            api_key.trusted_writer = trusted_writer
        api_key.save(update_fields=["name", "scopes", "trusted_writer"])
        api_key_cache_forget(key_hashes=[locked.key_hash])
        after = _key_state(api_key)
        if staff is not None and after != before:
            staff_audit(
                tenant=api_key.tenant_id,
                action="update",
                staff=staff,
                object_type="api_key",
                object_id=f"api_key:{api_key.pk}",
                before=before,
                after=after,
            )
    return api_key


def api_key_touch(*, api_key: ApiKey) -> None:
    """Record use, writing at most once a minute per key so hot keys cost no extra writes.

    Bookkeeping only: with PostgreSQL down the use goes unrecorded (logged), and the request
    goes on, served by whatever does not need PostgreSQL.
    """
    now = timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < LAST_USED_PRECISION:
        return
    from profiles.key_cache import api_key_cache

    if not api_key_cache().claim_touch(api_key.pk, seconds=LAST_USED_PRECISION.seconds):
        return  # another process recorded this minute's use
    try:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    except DatabaseError:
        logger.warning("last use of API key %s not recorded", api_key.prefix, exc_info=True)
        return
    api_key.last_used_at = now
    api_key_cache().refresh(api_key)  # other processes then skip the claim for a minute


def api_key_cache_forget_of_tenants(*, tenant_ids: Sequence[int]) -> None:
    """Drop the cached lookups of these tenants' active keys once the transaction commits."""
    hashes = ApiKey.objects.filter(tenant_id__in=tenant_ids, revoked_at__isnull=True)
    api_key_cache_forget(key_hashes=hashes.values_list("key_hash", flat=True))
