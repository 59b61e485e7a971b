"""docs/proxy/nginx.conf in front of the service: what the proxy refuses itself (a request line
or a header line past gunicorn's limits) is answered in the service's JSON error shape, and what
it passes on reaches the service, whose own refusals pass through unchanged."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "docs" / "proxy" / "nginx.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def proxy(live_server, tmp_path):
    if not Path(NGINX).exists():
        pytest.fail("nginx is not installed (scripts/test.sh installs it)")
    upstream = live_server.url.removeprefix("http://")
    port = _free_port()
    server = (
        CONF.read_text()
        .replace("server 127.0.0.1:8000;", f"server {upstream};")
        .replace("listen 8080;", f"listen 127.0.0.1:{port};")
    )
    (tmp_path / "server.conf").write_text(server)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {tmp_path};\n"
        f"  proxy_temp_path {tmp_path};\n  include {tmp_path}/server.conf;\n}}\n"
    )
    process = subprocess.Popen(
        [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.05)
    yield port
    process.terminate()
    process.wait(timeout=10)


def _get(port: int, path: str, headers: dict[str, str] | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    answer = connection.getresponse()
    return answer.status, answer.getheader("Content-Type", ""), answer.read()


@pytest.mark.django_db(transaction=True)
def test_what_the_proxy_refuses_is_json_and_the_rest_reaches_the_service(proxy) -> None:
    import json

    status, kind, body = _get(proxy, "/healthz")
    assert (status, json.loads(body)) == (200, {"status": "alive"})

    # past gunicorn's 8,190-byte request line: the proxy answers, in the service's shape
    status, kind, body = _get(proxy, "/v1/recall?q=" + "a" * 9000)
    assert status == 414 and kind.startswith("application/json")
    assert json.loads(body)["error"]["code"] == "uri_too_long"

    status, kind, body = _get(proxy, "/healthz", {"X-Padding": "b" * 9000})
    assert status == 431 and kind.startswith("application/json")
    assert json.loads(body)["error"]["code"] == "headers_too_large"

    # within the proxy's limits the service refuses a long URL itself
    status, kind, body = _get(proxy, "/v1/recall?q=" + "a" * 5000)
    assert status == 414 and json.loads(body)["error"]["code"] == "uri_too_long"
