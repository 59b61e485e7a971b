"""Keep the API-key cache true: drop entries when a key or its tenant changes."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from profiles.key_cache import api_key_cache
from profiles.models import ApiKey, Tenant


@receiver(post_save, sender=ApiKey)
@receiver(post_delete, sender=ApiKey)
def forget_cached_key(sender: Any, instance: ApiKey, **_: Any) -> None:
    key_hash = instance.key_hash
    transaction.on_commit(lambda: api_key_cache().forget([key_hash]))


@receiver(post_save, sender=Tenant)
def forget_cached_keys_of_tenant(sender: Any, instance: Tenant, **_: Any) -> None:
    hashes = list(ApiKey.objects.filter(tenant=instance).values_list("key_hash", flat=True))
    transaction.on_commit(lambda: api_key_cache().forget(hashes))
