"""Gunicorn settings, read from the project root (`gunicorn -c gunicorn.conf.py ...`)."""

import os
import signal
import sys

# gunicorn refuses over-long request lines and headers with HTML pages of its own. Its limits
# lie above the service's (API_MAX_URL_BYTES, API_MAX_HEADER_BYTES, API_MAX_HEADERS in
# memoryproject/settings.py, read here from the same variables with the same defaults), so a
# request over those reaches Django, whose RequestHeadLimitMiddleware answers 414 or 431 in
# the API's JSON error shape. Only a request far beyond them is still cut off by gunicorn.
_max_url = int(os.environ.get("API_MAX_URL_BYTES", "4096"))
_max_header = int(os.environ.get("API_MAX_HEADER_BYTES", "8190"))
_max_headers = int(os.environ.get("API_MAX_HEADERS", "100"))

# The request line: method, URL, "HTTP/1.1". 8190 is the most gunicorn reads (0 would mean no
# bound at all); the service caps API_MAX_URL_BYTES at 8000 to stay below it.
limit_request_line = 8190
# One header line, and the number of header fields: twice what the service accepts.
limit_request_field_size = 2 * _max_header
limit_request_fields = min(2 * _max_headers, 32768)


def post_worker_init(worker):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    """Load the word segmenter, the embedding model and recall's background statements in each
    new worker before it serves, so the first requests after a start are not a second slower.

    A stop asked for meanwhile (TERM) ends the worker at once: on a busy machine the warm-up
    can outlast gunicorn's graceful timeout, which then kills the worker hard."""
    if not worker.alive:  # told to stop while the application loaded
        sys.exit(0)
    previous = signal.signal(signal.SIGTERM, _exit_now)
    try:
        _warm_up(worker)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_now(signum, frame):  # noqa: ANN001, ANN202, ARG001 (a signal handler's signature)
    sys.exit(0)


def _warm_up(worker):  # noqa: ANN001, ANN202
    from memories.ltm.embedder import embedder
    from memories.ltm.text import warm_up
    from memories.recall.own_world import warm_up as own_world_warm_up
    from memories.recall.semantic import warm_up as semantic_warm_up

    warm_up()
    try:
        embedder()
        semantic_warm_up()
        own_world_warm_up()
    except Exception:  # noqa: BLE001 - a remote embedder may be down now; recall reports it later
        worker.log.warning("the embedder could not be loaded at start", exc_info=True)


def child_exit(server, worker):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    """With PROMETHEUS_MULTIPROC_DIR set, tell prometheus-client a worker is gone: its counters
    stay in the sum (they never go down), its live gauges leave it."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
