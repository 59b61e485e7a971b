import secrets
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from profiles.demo import demo_seed


class Command(BaseCommand):
    help = "Create (or refresh) the demo tenant with a tenant-admin login and print a new API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo-admin")
        parser.add_argument("--password", help="default: a new random password")

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or secrets.token_urlsafe(12)
        seed = demo_seed(username=options["username"], password=password)
        self.stdout.write(f"tenant:         {seed.tenant.slug}")
        self.stdout.write(f"admin login:    {seed.username} / {password}")
        self.stdout.write(f"API key:        {seed.api_key}")
