"""The TypeScript client (clients/typescript) in node: its generated types equal the schema the
service makes now, it type-checks strictly, and its tests pass against the live service.

`./scripts/test.sh` installs its dev dependencies (`npm ci`); node and npm come with the
machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from memories.ltm.models import LtmCard
from profiles.models import Tenant
from transcripts.models import Session

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
GENERATED = CLIENT / "src" / "schema.ts"
TSC = CLIENT / "node_modules" / "typescript" / "bin" / "tsc"
NODE_TESTS = ("test/client.test.mjs", "test/live.test.mjs")


@pytest.fixture(scope="module")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the TypeScript client needs Node 18 or newer")
    if not TSC.exists():
        pytest.fail(
            "clients/typescript has no node_modules: run `npm ci` there (./scripts/test.sh does)"
        )
    return node


def _run(node: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [node, *args],
        cwd=CLIENT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"node {' '.join(args)} failed:\n{output}"
    return output


def test_the_committed_types_are_those_of_the_current_schema(node: str, tmp_path: Path) -> None:
    schema, generated = tmp_path / "openapi.json", tmp_path / "schema.ts"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    _run(node, "scripts/generate.mjs", str(schema), str(generated))
    assert generated.read_text() == GENERATED.read_text(), (
        "clients/typescript/src/schema.ts differs from the service's OpenAPI schema: "
        "regenerate it with `npm run generate` in clients/typescript and commit it"
    )


def test_the_client_type_checks_strictly(node: str) -> None:
    _run(node, str(TSC), "--noEmit", "-p", "tsconfig.json")


def test_the_clients_node_tests_pass_against_the_live_service(
    node: str,
    service_url: str,
    api_key: str,
    key_for: Callable[..., str],
    tenant: Tenant,
) -> None:
    _run(node, str(TSC), "-p", "tsconfig.build.json")
    output = _run(
        node,
        "--test",
        *NODE_TESTS,
        env={
            "MEMORY_API_URL": service_url,
            "MEMORY_API_KEY": api_key,
            "MEMORY_API_READ_KEY": key_for(tenant, ("read",)),
        },
    )
    assert "# skipped 0" in output and "# fail 0" in output, output
    # The refused calls wrote nothing: the session holds its first append alone, and the one
    # card is the main test's import.
    assert Session.objects.get(tenant=tenant, external_id="s-ts-errors").event_count == 2
    assert LtmCard.objects.filter(tenant=tenant).count() == 1
