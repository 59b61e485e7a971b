#!/usr/bin/env bash
# Fuzz the running service against its own OpenAPI schema (/api/schema/) with schemathesis.
#
# Starts the local stores if needed, then a web server (on a free port) and a Celery worker on a
# database, Redis key prefix, Celery queue, Elasticsearch index, Milvus collection and transcript
# folder of this run's own; creates a tenant and a key with every scope; runs schemathesis with
# that key; prints the request count and every failure; removes what it created and stops what it
# started. Exits non-zero on any failure: a 5xx, a status or content type the schema does not
# declare, a body outside the declared shape (errors included), malformed input accepted, valid
# input refused, or a worker task that failed on what the API accepted.
#
#   ./scripts/fuzz.sh                    # small budget (CI): about two minutes
#   ./scripts/fuzz.sh --seconds 1200     # a long run
#   options (or env): --seconds FUZZ_SECONDS (time budget, default 120),
#     --examples FUZZ_EXAMPLES (test cases per operation and phase, default 25; with a time
#     budget the fuzzing phase repeats until the time is spent), --workers FUZZ_WORKERS (1; more
#     trip a thread-safety bug of Python 3.11's ast.parse inside hypothesis),
#     --seed FUZZ_SEED, --keep (leave the run's data for a look afterwards),
#     --remove RUN (remove what a kept run left)
# Reports (JUnit, NDJSON events, a pytest file reproducing each failure) go to var/fuzz-<run>/.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-120}
examples=${FUZZ_EXAMPLES:-25}
workers=${FUZZ_WORKERS:-1}
seed=${FUZZ_SEED:-}
keep=0
run=""
remove_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --examples) examples=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --remove) run=$2; remove_only=1; shift 2 ;;
    *)
      echo "usage: $0 [--seconds N] [--examples N] [--workers N] [--seed N] [--keep | --remove RUN]" >&2
      exit 2
      ;;
  esac
done

# shellcheck source=scripts/stores.sh
source scripts/stores.sh

[ -n "$run" ] || run=$(python3 -c 'import secrets; print(secrets.token_hex(4))')
dir="$PWD/var/fuzz-$run"
mkdir -p "$dir"
admin_url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
database="fuzz_$run"
export DATABASE_URL="${admin_url%/*}/$database"
export SECRET_KEY=${SECRET_KEY:-fuzz-only-secret}
export SECURE_COOKIES=0
export REDIS_KEY_PREFIX="fuzz-$run"
export CELERY_QUEUE="fuzz-$run"
export ELASTICSEARCH_INDEX_PREFIX="fuzz-$run"
export MILVUS_COLLECTION_PREFIX="fuzz_$run"
export TRANSCRIPT_STORAGE="$dir/transcripts"
export CELERY_TASK_ALWAYS_EAGER=0
export DJANGO_SETTINGS_MODULE=memoryproject.settings
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

pids=()
database_created=0
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$keep" = 1 ]; then
    echo "==> kept run $run: database $database, prefixes fuzz-$run / fuzz_$run, $dir"
    echo "    remove it with: $0 --remove $run"
  else
    echo "==> removing run $run's indexes, collections, Redis keys, queue, database and files"
    .venv/bin/python manage.py shell --no-imports -c "$(cat <<'PY'
import redis
from django.conf import settings
from memories.history.search import history_search_index
from memories.history.vectors import history_vector_index
from memories.ltm.search import card_search_index
from memories.ltm.vectors import vector_index
from memoryproject import redis_keys as keys
from memoryproject.redis_client import redis_connection
for index in (card_search_index(), vector_index(), history_search_index(), history_vector_index()):
    index.drop()
client = redis_connection()
stale = list(client.scan_iter(match=keys.all_keys_pattern(), count=1000))
for start in range(0, len(stale), 1000):
    client.delete(*stale[start:start + 1000])
broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
queue = settings.CELERY_TASK_DEFAULT_QUEUE
leftovers = list(broker.scan_iter(match=f"*{queue}*", count=1000))
if leftovers:
    broker.delete(*leftovers)
PY
)" || echo "warning: the run's store data could not all be removed" >&2
    if [ "$database_created" = 1 ]; then
      PGOPTIONS="-c client_min_messages=warning" psql -q "$admin_url" -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" ||
        echo "warning: database $database could not be dropped" >&2
    fi
    # Reports stay only when something failed.
    rm -rf "$dir/transcripts"
    [ "$status" = 0 ] && rm -rf "$dir"
  fi
  stores_down
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stores_up
if [ "$remove_only" = 1 ]; then
  database_created=1
  exit 0
fi
echo "==> run $run: database $database, web $base"
psql -q "$admin_url" -c "CREATE DATABASE \"$database\""
database_created=1
.venv/bin/python manage.py migrate --noinput >/dev/null
.venv/bin/python manage.py ensure_stores >/dev/null
.venv/bin/python manage.py seed_demo --password "$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')" >/dev/null
key=$(.venv/bin/python manage.py create_api_key demo --name fuzz --scopes read,write,admin)

.venv/bin/gunicorn memoryproject.wsgi --bind "127.0.0.1:$port" --workers 2 --timeout 60 \
  --log-level warning >"$dir/web.log" 2>&1 &
pids+=($!)
nice -n 10 .venv/bin/celery -A memoryproject worker --concurrency 1 --loglevel WARNING \
  >"$dir/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 240); do
  curl -fsS -m 2 -o /dev/null "$base/healthz" 2>/dev/null && break
  sleep 0.25
done
curl -fsS -m 5 -o /dev/null "$base/api/schema/" || { echo "error: the service did not start" >&2; cat "$dir/web.log" >&2; exit 1; }

echo "==> schemathesis: ${seconds}s, ${examples} examples per operation, $workers workers"
set +e
.venv/bin/schemathesis --config-file scripts/fuzz.toml run "$base/api/schema/" \
  --header "Authorization: Bearer $key" \
  --max-time "$seconds" --max-examples "$examples" --workers "$workers" --continue-on-failure \
  --request-timeout 30 \
  ${seed:+--seed "$seed"} \
  --report junit,ndjson,pytest --report-dir "$dir" \
  --no-color 2>&1 | sed -e "s/$key/<key>/g" | tee "$dir/schemathesis.log"
fuzz_status=${PIPESTATUS[0]}
set -e

.venv/bin/python scripts/fuzz_summary.py "$dir" || fuzz_status=1
exit "$fuzz_status"
