#!/usr/bin/env bash
# One command on a fresh machine: install, start the local stores, migrate, create the demo
# tenant (printing its admin login and API key), then run web + worker + beat until Ctrl-C.
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

pids=()
shutdown() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  stores_down
}
trap shutdown EXIT
trap 'exit 130' INT TERM

stores_up
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py collectstatic --noinput --verbosity 0
.venv/bin/python manage.py ensure_stores
echo "==> demo tenant"
.venv/bin/python manage.py seed_demo ${DEMO_ADMIN_PASSWORD:+--password "$DEMO_ADMIN_PASSWORD"}

# gunicorn.conf.py: warm-up hook and request line / header limits above the service's own.
.venv/bin/gunicorn --config gunicorn.conf.py memoryproject.wsgi --bind "127.0.0.1:$PORT" \
  --workers "${WEB_WORKERS:-4}" --log-level warning &
pids+=($!)
.venv/bin/celery -A memoryproject worker --loglevel INFO --concurrency "${WORKER_CONCURRENCY:-2}" &
pids+=($!)
.venv/bin/celery -A memoryproject beat --loglevel INFO --schedule var/celerybeat-schedule &
pids+=($!)

cat <<MSG
==> running: API http://127.0.0.1:$PORT/v1/  admin http://127.0.0.1:$PORT/admin/
    docs http://127.0.0.1:$PORT/api/docs/  readiness http://127.0.0.1:$PORT/readyz  (Ctrl-C stops)
MSG
wait -n "${pids[@]}"
echo "==> a process exited; stopping the others" >&2
exit 1
