from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryproject.errors import DomainError
from profiles.models import Tenant
from profiles.services.api_keys import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a tenant and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--name", default="cli key")
        parser.add_argument(
            "--scopes", default="read,write", help="comma-separated: read, write, admin"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant = Tenant.objects.get(slug=options["tenant"])
        except Tenant.DoesNotExist:
            raise CommandError(f"No tenant {options['tenant']!r}.") from None
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        try:
            _, secret = api_key_create(tenant=tenant, name=options["name"], scopes=scopes)
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(secret)
