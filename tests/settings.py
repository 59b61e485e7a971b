"""Test settings: the real stores, under names of this run's own, removed afterwards."""

import os
import tempfile
import uuid

RUN_ID = os.environ.setdefault("MEMORY_TEST_RUN_ID", uuid.uuid4().hex[:10])
os.environ.setdefault("SECRET_KEY", "test-only-secret")
os.environ["SECURE_COOKIES"] = "0"
os.environ["REDIS_KEY_PREFIX"] = f"test-{RUN_ID}"
os.environ["ELASTICSEARCH_INDEX_PREFIX"] = f"test-{RUN_ID}"
os.environ["MILVUS_COLLECTION_PREFIX"] = f"test_{RUN_ID}"
os.environ["CELERY_QUEUE"] = f"test-{RUN_ID}"
# No worker or beat runs beside the suite (the worker tests start their own): /readyz reports
# them as warnings. tests/memoryproject/test_health.py checks both settings.
os.environ.setdefault("READYZ_REQUIRE_WORKERS", "0")
os.environ["TRANSCRIPT_STORAGE"] = os.path.join(
    tempfile.gettempdir(), f"memory-test-{RUN_ID}", "transcripts"
)

from memoryproject.settings import *  # noqa: E402,F403

# A test database of this run's own, so two runs on one machine never share one.
DATABASES["default"]["TEST"] = {"NAME": f"test_memory_{RUN_ID}"}  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"] = {  # noqa: F405 - tests do not run collectstatic
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}
MIDDLEWARE = [m for m in MIDDLEWARE if not m.startswith("whitenoise")]  # noqa: F405

# Tasks run inline in tests; the worker test switches this off and starts a real worker.
CELERY_TASK_ALWAYS_EAGER = os.environ.get("CELERY_TASK_ALWAYS_EAGER", "1") == "1"

# Recall's long-term budget is for production latency; on a loaded test machine the first query
# embedding can take longer, and a skipped layer would make a test depend on timing. Tests of the
# budget itself set it explicitly.
RECALL_LTM_TIMEOUT_SECONDS = 30.0
