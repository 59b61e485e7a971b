from django.core.management import call_command


def test_the_openapi_schema_generates_without_warnings(tmp_path) -> None:
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yml"))
    schema = (tmp_path / "s.yml").read_text()
    for path in ("/v1/sessions/{session_id}/events", "/v1/memories/proposals", "/v1/memories/stm"):
        assert path in schema
