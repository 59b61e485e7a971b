"""One list of error codes: the ErrorCode enum, which every raise uses and the schema lists."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from memoryproject.errors import Conflict, ErrorCode, Invalid, error_body

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memoryproject", "profiles", "transcripts", "memories")
DOMAIN_ERRORS = {
    "DomainError",
    "Invalid",
    "NotFound",
    "Conflict",
    "Gone",
    "PayloadTooLarge",
    "StoreUnavailable",
}


def test_the_schema_lists_every_error_code() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    code = schema["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    assert code["enum"] == [member.value for member in ErrorCode]


def _loose_codes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        name = node.func.attr if isinstance(node.func, ast.Attribute) else name
        for keyword in node.keywords:
            loose = keyword.arg == "code" and isinstance(keyword.value, ast.Constant)
            if loose and (name in DOMAIN_ERRORS or name == "error_body"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if name == "error_body" and node.args and isinstance(node.args[0], ast.Constant):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_error_is_raised_with_a_loose_code_string() -> None:
    loose = [
        where
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for where in _loose_codes(path)
    ]
    assert loose == []


def test_an_error_keeps_the_code_it_was_raised_with() -> None:
    error = Conflict("Already decided.", code=ErrorCode.ALREADY_DECIDED)
    assert error.code is ErrorCode.ALREADY_DECIDED
    assert Invalid("Bad.").code is ErrorCode.INVALID
    assert error_body(error.code, error.message)["error"]["code"] == "already_decided"


def test_a_code_outside_the_enum_is_refused() -> None:
    with pytest.raises(ValueError):
        Conflict("Bad.", code="made_up")  # type: ignore[arg-type]
