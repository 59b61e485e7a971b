"""The SDK's models type-check, both ways, against models a standard generator makes from the
service's OpenAPI schema.

datamodel-code-generator turns the schema drf-spectacular builds into TypedDicts; mypy then
checks a module that, for every operation, returns the SDK's request, query and response models
as the generated ones and the generated ones as the SDK's. mypy treats TypedDict items as
invariant and compares required keys and closedness, so a field renamed, retyped, made required,
added or dropped on either side is a type error.

The SDK stays hand-written (its methods read like the API, its TypedDicts are the JSON itself
under stable names, where a generator names by serializer and flattens nothing); this test is
what keeps it exactly equal to the schema.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_memory_client import models as sdk
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from tests.clients.test_sdk_schema import OPERATIONS

GENERATOR = [
    sys.executable,
    "-m",
    "datamodel_code_generator",
    "--input-file-type",
    "openapi",
    "--output-model-type",
    "typing.TypedDict",
    "--target-python-version",
    "3.11",
    "--enum-field-as-literal",
    "all",
    "--strict-nullable",  # `nullable: true` is `| None`; a field without it is not
    "--formatters",
    "builtin",
    "--disable-timestamp",
]
MYPY = [sys.executable, "-m", "mypy", "--python-version", "3.11", "--no-error-summary"]


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        operation["operationId"]: operation
        for item in schema["paths"].values()
        for method, operation in item.items()
        if method in ("get", "post", "patch", "put", "delete")
    }


def _component(schema: dict[str, Any]) -> str:
    ref = schema["$ref"]  # every body and answer of the API is a named component
    return str(ref).rsplit("/", 1)[-1]


def _query_component(operation_id: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", operation_id)) + "Query"


def _with_query_components(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each operation's query parameters as one object component as well, so the
    generator types them like a body."""
    components = schema["components"]["schemas"]
    for operation_id, operation in _operations(schema).items():
        query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        if query:
            components[_query_component(operation_id)] = {
                "type": "object",
                "properties": {p["name"]: p["schema"] for p in query},
                "required": [p["name"] for p in query if p.get("required")],
            }
    return schema


def _pairs(schema: dict[str, Any]) -> dict[str, list[tuple[str, str, str]]]:
    """operationId -> [(what, SDK model, generated model)] for each body, query and answer."""
    components = schema["components"]["schemas"]
    pairs: dict[str, list[tuple[str, str, str]]] = {}
    for operation_id, operation in _operations(schema).items():
        _, body_model, query_model, responses = OPERATIONS[operation_id]
        found = []
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        assert (body is None) == (body_model is None), operation_id
        if body is not None:
            found.append(("request", body_model.__name__, _component(body["schema"])))
        if query_model is not None:
            assert _query_component(operation_id) in components, operation_id
            found.append(("query", query_model.__name__, _query_component(operation_id)))
        for status, model in responses.items():
            content = operation["responses"][status].get("content", {}).get("application/json")
            assert (content is None) == (model is None), (operation_id, status)
            if model is not None:
                found.append((f"response_{status}", model.__name__, _component(content["schema"])))
        pairs[operation_id] = found
    return pairs


def _check_module(pairs: dict[str, list[tuple[str, str, str]]]) -> str:
    """For every pair, a function returning the SDK's model as the generated one, and back."""
    lines = ["import gen_models as gen", "import sdk_models as sdk", ""]
    for operation_id, found in sorted(pairs.items()):
        stem = re.sub(r"\W", "_", operation_id)
        for what, sdk_name, component in found:
            lines += [
                f"def {stem}_{what}_sdk_as_generated(x: sdk.{sdk_name}) -> gen.{component}:",
                "    return x",
                f"def {stem}_{what}_generated_as_sdk(x: gen.{component}) -> sdk.{sdk_name}:",
                "    return x",
                "",
            ]
    return "\n".join(lines)


def _class_names(generated: str) -> set[str]:
    return set(re.findall(r"^class (\w+)\(", generated, re.MULTILINE))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sdk_generated")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    document = SchemaGenerator().get_schema(request=None, public=True)
    # Rendered and parsed back: plain JSON, as GET /api/schema/?format=json serves it.
    return _with_query_components(json.loads(OpenApiJsonRenderer().render(document)))


@pytest.fixture(scope="module")
def generated(schema: dict[str, Any], workdir: Path) -> str:
    source = workdir / "schema.json"
    source.write_text(json.dumps(schema))
    output = workdir / "gen_models.py"
    run = subprocess.run(
        [*GENERATOR, "--input", str(source), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return output.read_text()


@pytest.fixture(scope="module")
def check_module(schema: dict[str, Any], generated: str) -> str:
    pairs = _pairs(schema)
    components = {c for found in pairs.values() for _, _, c in found}
    missing = components - _class_names(generated)
    assert not missing, f"the generator made no class for {sorted(missing)}"
    return _check_module(pairs)


def _mypy(
    workdir: Path, tag: str, *, sdk_source: str, generated: str, check: str
) -> subprocess.CompletedProcess[str]:
    # The SDK's models module alone (it imports only typing): the package's client would make
    # mypy read httpx as well, which checks nothing this test is about. Each run has modules of
    # its own names, so the shared cache never serves one run's models to another.
    (workdir / f"sdk_{tag}.py").write_text(sdk_source)
    (workdir / f"gen_{tag}.py").write_text(generated)
    (workdir / f"check_{tag}.py").write_text(
        check.replace("import sdk_models as sdk", f"import sdk_{tag} as sdk").replace(
            "import gen_models as gen", f"import gen_{tag} as gen"
        )
    )
    (workdir / "mypy.ini").write_text("[mypy]\n")
    return subprocess.run(
        [
            *MYPY,
            "--config-file",
            str(workdir / "mypy.ini"),
            "--cache-dir",
            str(workdir / ".mypy_cache"),
            f"check_{tag}.py",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _sdk_source() -> str:
    return Path(sdk.__file__).read_text()


def test_every_operation_is_checked(schema: dict[str, Any], check_module: str) -> None:
    pairs = _pairs(schema)
    assert set(pairs) == set(OPERATIONS) == set(_operations(schema))
    for operation_id, operation in _operations(schema).items():
        query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        typed = [
            *(["request"] if operation.get("requestBody") else []),
            *(["query"] if query else []),
            *(
                f"response_{status}"
                for status, answer in operation["responses"].items()
                if status < "400" and answer.get("content")
            ),
        ]
        if operation_id == "proposals_submit":
            typed.remove("query")  # `dry_run`, a keyword of its own in the SDK
        assert sorted(what for what, _, _ in pairs[operation_id]) == sorted(typed), operation_id
        stem = re.sub(r"\W", "_", operation_id)
        for what in typed:
            assert f"def {stem}_{what}_sdk_as_generated(" in check_module
            assert f"def {stem}_{what}_generated_as_sdk(" in check_module


def test_sdk_models_type_check_against_the_generated_ones(
    workdir: Path, generated: str, check_module: str
) -> None:
    run = _mypy(workdir, "as_is", sdk_source=_sdk_source(), generated=generated, check=check_module)
    assert run.returncode == 0, run.stdout + run.stderr


# A change of one SDK model, each of a kind the check must catch: (old, new, the model mypy names).
SDK_CHANGES = {
    "response field retyped": (
        "class ImportedCard(TypedDict):\n    memory_id: str | None  # None when quarantined\n"
        "    version: int | None\n",
        "class ImportedCard(TypedDict):\n    memory_id: str | None  # None when quarantined\n"
        "    version: str | None\n",
        "CardImportResponse",
    ),
    "response field dropped": ("    injection_text: str\n", "", "RecallResponse"),
    "response field renamed": ("    head_hash: str\n", "    head_sha: str\n", "AppendResponse"),
    "response field no longer nullable": (
        "    occurred_at: str | None\n",
        "    occurred_at: str\n",
        "Card",
    ),
    "request field made required": (
        "    task_id: NotRequired[str]\n    project: NotRequired[str]\n    workspace:",
        "    task_id: str\n    project: NotRequired[str]\n    workspace:",
        "RecallRequest",
    ),
    "request field added": (
        "class CompressRequest(TypedDict, closed=True):\n    budget_tokens: int\n",
        "class CompressRequest(TypedDict, closed=True):\n    budget_tokens: int\n"
        "    strategy: NotRequired[str]\n",
        "CompressRequest",
    ),
    "request enum widened to str": (
        "    mode: NotRequired[SearchMode]\n",
        "    mode: NotRequired[str]\n",
        "LtmSearchRequest",
    ),
    "request model open": (
        "class DeletionRequestIn(TypedDict, total=False, closed=True):",
        "class DeletionRequestIn(TypedDict, total=False):",
        "DeletionRequestIn",
    ),
}

# The same from the schema's side: the service starts requiring a field the SDK does not send.
SCHEMA_CHANGE = (
    "class CompressInputRequest(TypedDict, closed=True):\n    budget_tokens: int\n",
    "class CompressInputRequest(TypedDict, closed=True):\n    budget_tokens: int\n"
    "    strategy: str\n",
    "CompressRequest",
)


def _changed(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"no longer there, once: {old!r}"
    return source.replace(old, new)


@pytest.mark.parametrize("change", sorted(SDK_CHANGES))
def test_a_changed_sdk_model_fails_the_check(
    workdir: Path, generated: str, check_module: str, change: str
) -> None:
    old, new, model = SDK_CHANGES[change]
    run = _mypy(
        workdir,
        re.sub(r"\W", "_", change),
        sdk_source=_changed(_sdk_source(), old, new),
        generated=generated,
        check=check_module,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert f'"{model}"' in run.stdout, run.stdout


def test_a_changed_schema_fails_the_check(workdir: Path, generated: str, check_module: str) -> None:
    old, new, model = SCHEMA_CHANGE
    run = _mypy(
        workdir,
        "schema_changed",
        sdk_source=_sdk_source(),
        generated=_changed(generated, old, new),
        check=check_module,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert f'"{model}"' in run.stdout, run.stdout
