"""API-key authentication for agents and the scope check every API view applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from profiles.models import ApiKey, Tenant
from profiles.selectors import api_key_for_secret
from profiles.services.api_keys import api_key_touch


@dataclass(frozen=True)
class AgentPrincipal:
    """The caller of an API request: one tenant, through one API key with its scopes."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def tenant(self) -> Tenant:
        return self.api_key.tenant

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.api_key.scopes)


def request_tenant(request: Request) -> Tenant:
    """The tenant of an authenticated API request (HasScope has admitted only agents)."""
    principal = request.user
    if not isinstance(principal, AgentPrincipal):
        raise NotAuthenticated()
    return principal.tenant


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>`; unknown, revoked or malformed keys answer 401."""

    def authenticate(self, request: Request) -> tuple[AgentPrincipal, ApiKey] | None:
        parts = get_authorization_header(request).split()
        if not parts:
            return None
        if parts[0].lower() != b"bearer" or len(parts) != 2:
            raise AuthenticationFailed("Send the key as 'Authorization: Bearer <key>'.")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Unknown or revoked API key.") from None
        api_key = api_key_for_secret(secret=secret)
        if api_key is None:
            raise AuthenticationFailed("Unknown or revoked API key.")
        api_key_touch(api_key=api_key)
        return AgentPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memory"'


class HasScope(BasePermission):
    """The key must hold the scope the view requires for the method (read / write / admin).

    Views declare `required_scopes = {"GET": "read", "POST": "write"}`; a method not listed
    needs `admin`.
    """

    message = "This API key lacks the scope this operation needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        principal = request.user
        if not isinstance(principal, AgentPrincipal):
            return False
        required = getattr(view, "required_scopes", {}).get(request.method, ApiKey.Scope.ADMIN)
        if required in principal.scopes:
            return True
        self.message = f"This API key lacks the '{required}' scope."
        return False


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents API-key authentication in the OpenAPI schema."""

    target_class = "profiles.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <key>"}
