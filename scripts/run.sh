#!/usr/bin/env bash
# One command on a fresh machine: install, start the local stores, migrate, create the demo
# tenant, run web + worker + beat, and once /readyz answers print where to go, the demo login
# and API key. Ctrl-C stops web, worker and beat in that order, then the stores it started.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
# shellcheck source=scripts/stores.sh
source scripts/stores.sh

mkdir -p var
if [ -z "${SECRET_KEY:-}" ]; then
  [ -s var/secret_key ] || python3 -c 'import secrets; print(secrets.token_urlsafe(50))' >var/secret_key
  SECRET_KEY=$(cat var/secret_key)
  export SECRET_KEY
fi
export SECURE_COOKIES=${SECURE_COOKIES:-0}   # plain http on localhost
PORT=${PORT:-8000}
READY_TIMEOUT=${READY_TIMEOUT:-300}
WEB_STOP_SECONDS=${WEB_STOP_SECONDS:-40}     # above gunicorn's graceful_timeout (30 s)
WORKER_STOP_SECONDS=${WORKER_STOP_SECONDS:-90}
# Worker and beat say only what needs attention unless asked; the web logs each request.
CELERY_LOG_LEVEL=${CELERY_LOG_LEVEL:-${LOG_LEVEL:-WARNING}}
celery_quiet=(--quiet)
case "${CELERY_LOG_LEVEL^^}" in DEBUG | INFO) celery_quiet=() ;; esac
# Each web worker counts in its own file here and /metrics sums them (multiprocess mode).
metrics_dir=$PWD/var/prometheus

# Web, worker and beat each run in a session of their own, so Ctrl-C reaches this script alone
# and it stops them one at a time with TERM. When Ctrl-C reached every process at once, gunicorn's
# master and workers each began a quick stop while this script sent TERM as well; a worker still
# loading its models or answering a request outlived the stop's grace and got SIGKILL ("Perhaps
# out of memory?"), and Celery's worker took a second signal as a cold shutdown.
own_session=(.venv/bin/python -c 'import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])')
order=(web worker beat)
declare -A pid_of=()
stop_requested=""

start() {  # start NAME COMMAND...
  local name=$1; shift
  "$@" &
  pid_of[$name]=$!
}

first_exited() {  # the name of the first process that is no longer running
  local name
  for name in "${!pid_of[@]}"; do
    kill -0 "${pid_of[$name]}" 2>/dev/null || { echo "$name"; return 0; }
  done
  return 1
}

gone_within() {  # gone_within PID SECONDS
  local pid=$1 tenths=$(($2 * 10))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$tenths" -gt 0 ] || return 1
    tenths=$((tenths - 1))
    sleep 0.1
  done
}

stop_process() {  # stop_process NAME SECONDS: TERM, then wait; stronger only after SECONDS
  local name=$1 seconds=$2 pid=${pid_of[$1]:-}
  [ -n "$pid" ] || return 0
  unset "pid_of[$name]"
  kill -TERM "$pid" 2>/dev/null || true
  if ! gone_within "$pid" 5; then
    [ "$name" != worker ] || echo "==> waiting for the worker's running tasks (up to ${seconds}s)"
    if ! gone_within "$pid" "$((seconds - 5))"; then
      if [ "$name" = worker ]; then
        echo "==> the worker's tasks still run after ${seconds}s; cold shutdown (they are requeued)"
        kill -QUIT "$pid" 2>/dev/null || true
        gone_within "$pid" 15 || true
      fi
      if kill -0 "$pid" 2>/dev/null; then
        echo "==> $name did not stop; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

stop_all() {
  local status=$?
  trap '' INT TERM HUP   # a second Ctrl-C does not cut the stop short
  if [ "${#pid_of[@]}" -gt 0 ]; then
    local name running=()
    for name in "${order[@]}"; do [ -z "${pid_of[$name]:-}" ] || running+=("$name"); done
    echo "==> stopping $(printf '%s, ' "${running[@]}" | sed 's/, $//')"
    stop_process web "$WEB_STOP_SECONDS"
    stop_process worker "$WORKER_STOP_SECONDS"
    stop_process beat 15
  fi
  stores_down
  if [ -n "$stop_requested" ]; then
    echo "==> stopped"
    exit 0
  fi
  exit "$status"
}
trap stop_all EXIT
trap 'stop_requested=1' INT TERM HUP

stores_up
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py collectstatic --noinput --verbosity 0
.venv/bin/python manage.py ensure_stores
echo "==> demo tenant"
demo=$(.venv/bin/python manage.py seed_demo ${DEMO_ADMIN_PASSWORD:+--password "$DEMO_ADMIN_PASSWORD"})
echo "$demo"

rm -rf "$metrics_dir" && mkdir -p "$metrics_dir"
echo "==> starting web, worker and beat on port $PORT (this may take a minute)"
# gunicorn.conf.py: warm-up and child_exit hooks, request line / header limits above the
# service's own.
start web env PROMETHEUS_MULTIPROC_DIR="$metrics_dir" "${own_session[@]}" .venv/bin/gunicorn \
  --config gunicorn.conf.py memoryproject.wsgi --bind "127.0.0.1:$PORT" \
  --workers "${WEB_WORKERS:-4}" --log-level warning
start_worker() {
  start worker env PROMETHEUS_MULTIPROC_DIR="$metrics_dir" "${own_session[@]}" .venv/bin/celery \
    -A memoryproject "${celery_quiet[@]}" worker --loglevel "$CELERY_LOG_LEVEL" \
    --concurrency "${WORKER_CONCURRENCY:-2}"
}
start_worker
start beat "${own_session[@]}" .venv/bin/celery -A memoryproject "${celery_quiet[@]}" beat \
  --loglevel "$CELERY_LOG_LEVEL" --schedule var/celerybeat-schedule

# A worker that exits on its own (a broker fault can crash kombu's consumer) is started again,
# as a supervisor would, up to WORKER_RESTARTS times; the web or beat exiting stops everything.
WORKER_RESTARTS=${WORKER_RESTARTS:-5}
exited_on_its_own() {
  local status=0
  wait "${pid_of[$1]}" 2>/dev/null || status=$?
  unset "pid_of[$1]"
  if [ "$1" = worker ] && [ "$WORKER_RESTARTS" -gt 0 ]; then
    WORKER_RESTARTS=$((WORKER_RESTARTS - 1))
    echo "==> the worker exited on its own (status $status); starting it again" >&2
    sleep 2
    start_worker
    return 0
  fi
  echo "==> $1 exited on its own (status $status); stopping the others" >&2
  exit 1
}

base=http://127.0.0.1:$PORT
started=$SECONDS
state=ready
# One poll at a time: the socket takes connections before a worker serves, and a poll given up
# on would still be answered (and logged) later.
until curl -fsS -m 60 -o /dev/null "$base/readyz" 2>/dev/null; do
  [ -z "$stop_requested" ] || exit 0
  if name=$(first_exited); then exited_on_its_own "$name"; fi
  if [ $((SECONDS - started)) -ge "$READY_TIMEOUT" ]; then
    failing=$(curl -s -m 10 "$base/readyz" 2>/dev/null | python3 -c \
      'import json, sys; print(", ".join(json.load(sys.stdin).get("failing", [])))' 2>/dev/null \
      || echo "no answer")
    echo "==> not ready after ${READY_TIMEOUT}s (failing: ${failing:-?}); see $base/readyz" >&2
    state="not ready"
    break
  fi
  sleep 1
done

cat <<MSG
==> running ($state after $((SECONDS - started))s)
    API        $base/v1/
    admin      $base/admin/
    API docs   $base/api/docs/
    readiness  $base/readyz
    Ctrl-C stops web, worker and beat.
$demo
MSG

while [ -z "$stop_requested" ]; do
  wait -n "${pid_of[@]}" 2>/dev/null || true   # a process exited, or a signal arrived
  if [ -z "$stop_requested" ] && name=$(first_exited); then exited_on_its_own "$name"; fi
done
