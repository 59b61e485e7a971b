from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from memoryproject.schema import ERROR_SCHEMA

ALWAYS = {"401", "403", "429", "503"}
METHODS = ("get", "post", "put", "patch", "delete")


def test_the_openapi_schema_generates_without_warnings(tmp_path) -> None:
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yml"))
    schema = (tmp_path / "s.yml").read_text()
    for path in ("/v1/sessions/{session_id}/events", "/v1/memories/proposals", "/v1/memories/stm"):
        assert path in schema
    # the overrides name the enums where they live: a short-term item's type is an enum
    assert "StmMemoryTypeEnum:" in schema and "LtmMemoryTypeEnum:" in schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def test_every_operation_declares_its_errors_in_the_one_shape(schema) -> None:
    assert schema["components"]["schemas"]["Error"] == ERROR_SCHEMA
    for method, path, operation in operations(schema):
        responses = operation["responses"]
        expected = set(ALWAYS)
        if "requestBody" in operation:
            expected |= {"400", "413", "415"}
        if any(p["in"] == "query" for p in operation.get("parameters", [])):
            expected.add("400")
        if "{" in path:
            expected.add("404")
        assert expected <= set(responses), (method, path, sorted(responses))
        for status, response in responses.items():
            if status >= "400":
                body = response["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/Error"}, (method, path, status)
                assert response["description"]


def test_views_add_the_errors_of_their_own(schema) -> None:
    events = schema["paths"]["/v1/sessions/{session_id}/events"]
    assert {"200", "201", "409", "410"} <= set(events["post"]["responses"])
    assert "410" in events["get"]["responses"]
    assert "404" in schema["paths"]["/v1/memories/stm"]["get"]["responses"]


def test_success_codes_are_the_ones_the_views_answer(schema) -> None:
    paths = schema["paths"]
    assert [s for s in paths["/v1/ltm/cards:import"]["post"]["responses"] if s < "300"] == ["201"]
    assert "204" in paths["/v1/memories/{item_id}"]["delete"]["responses"]
    assert "202" in paths["/v1/ltm/cards/{memory_id}"]["delete"]["responses"]


def test_request_bodies_refuse_undeclared_fields_but_free_form_objects_stay_open(schema) -> None:
    components = schema["components"]["schemas"]
    for method, path, operation in operations(schema):
        if "requestBody" not in operation:
            continue
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert components[ref.rsplit("/", 1)[-1]]["additionalProperties"] is False, (method, path)
    event = components["EventInputRequest"]
    assert event["additionalProperties"] is False
    # Any JSON value, null included, under any name.
    assert event["properties"]["metadata"]["additionalProperties"] == {"nullable": True}
    # Response shapes are not closed.
    assert "additionalProperties" not in components["ReplayOutput"]


def test_request_limits_are_in_the_schema(schema) -> None:
    components = schema["components"]["schemas"]
    proposals = components["ProposalsInputRequest"]["properties"]["proposals"]
    assert (proposals["minItems"], proposals["maxItems"]) == (1, 100)
    assert components["AppendInputRequest"]["properties"]["events"]["minItems"] == 1
    summary = components["ProposalRequest"]["properties"]["summary"]
    assert summary["minLength"] == 1 and "pattern" not in summary  # not trimmed
    assert components["SearchInputRequest"]["properties"]["query"]["pattern"] == r"\S"


def test_optional_query_parameters_may_be_empty(schema) -> None:
    parameters = {p["name"]: p for p in schema["paths"]["/v1/promotions"]["get"]["parameters"]}
    assert parameters["status"]["allowEmptyValue"] is True
    stm = {p["name"]: p for p in schema["paths"]["/v1/memories/stm"]["get"]["parameters"]}
    assert "allowEmptyValue" not in stm["user_id"]  # required


def test_links_name_existing_operations(schema) -> None:
    ids = {operation["operationId"] for _, _, operation in operations(schema)}
    links = [
        link
        for _, _, operation in operations(schema)
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert len(links) >= 10
    assert {link["operationId"] for link in links} <= ids


@pytest.mark.django_db
def test_real_error_answers_match_the_declared_error_shape(tenant, client_for) -> None:
    reader = client_for(tenant, scopes=("read",))
    answers = [
        APIClient().get(reverse("memories:promotions")),  # 401
        reader.patch(
            reverse("profiles:profile", kwargs={"user_id": "u1"}), {}, format="json"
        ),  # 403
        reader.get(reverse("transcripts:events", kwargs={"session_id": "nope"})),  # 404
        reader.get(reverse("memories:promotions"), {"limit": "many"}),  # 400
        reader.post(reverse("memories:recall"), "not json", content_type="text/plain"),  # 415
        reader.get("/v1/no-such-path"),  # 404 outside any view
    ]
    assert [a.status_code for a in answers] == [401, 403, 404, 400, 415, 404]
    for answer in answers:
        jsonschema.validate(answer.json(), ERROR_SCHEMA)


# Objects whose keys are the client's or the tenant's own, free by design (docs/architecture.md).
FREE_FORM_FIELDS = {"metadata", "detail", "extras"}
# Maps keyed by a name the service knows whose values are whatever JSON was stored.
FREE_VALUED_MAPS = {("ProfileBlockOutput", "preferences")}


def _untyped_object(node: dict[str, Any]) -> bool:
    """An object that declares neither its properties nor the type of its values."""
    if node.get("type") != "object" or node.get("properties") or "$ref" in node:
        return False
    values = node.get("additionalProperties", True)
    if not isinstance(values, dict):
        return True
    return not ({"type", "$ref", "properties", "oneOf", "anyOf", "allOf"} & set(values))


def free_form_fields(components: dict[str, Any]) -> list[str]:
    """`Component.field` (`[]` for a list's items, `{}` for a map's values) of every object in
    the components that describes nothing of its contents."""
    found: list[str] = []

    def walk(node: Any, where: str, component: str) -> None:
        if not isinstance(node, dict):
            return
        for name, field in (node.get("properties") or {}).items():
            path = f"{where}.{name}"
            inner = field.get("items", field) if field.get("type") == "array" else field
            allowed = name in FREE_FORM_FIELDS or (component, name) in FREE_VALUED_MAPS
            if _untyped_object(inner) and not allowed:
                found.append(path + ("[]" if inner is not field else ""))
            walk(field, path, component)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{where}[]", component)
        if isinstance(node.get("additionalProperties"), dict):
            values = node["additionalProperties"]
            if _untyped_object(values):
                found.append(f"{where}{{}}")
            walk(values, f"{where}{{}}", component)
        for key in ("allOf", "oneOf", "anyOf"):
            for option in node.get(key, []):
                walk(option, where, component)

    for name, component in components.items():
        walk(component, name, name)
    return found


def test_no_answer_or_request_holds_a_free_form_object_outside_the_list(schema) -> None:
    assert free_form_fields(schema["components"]["schemas"]) == []


def test_the_walk_finds_free_form_objects_wherever_they_nest() -> None:
    anything = {"type": "object", "additionalProperties": {"nullable": True}}
    components = {
        "A": {
            "type": "object",
            "properties": {
                "receipt": anything,
                "notes": {"type": "array", "items": {"type": "object"}},
                "by_store": {"type": "object", "additionalProperties": anything},
                "metadata": anything,  # free by design
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                "nested": {"type": "object", "properties": {"explain": {"type": "object"}}},
            },
        }
    }
    assert free_form_fields(components) == [
        "A.receipt",
        "A.notes[]",
        "A.by_store{}",
        "A.nested.explain",
    ]
