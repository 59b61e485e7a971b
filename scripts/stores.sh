# Sourced by run.sh and test.sh: start the local Elasticsearch stand-in and Milvus server when
# their URLs point at this machine and nothing answers there, and stop only what was started.
#   stores_up    start what is missing, wait until it answers
#   stores_down  stop what stores_up started (by PID, or by the stand-in's own data dir)

STORES_DIR=${STORES_DIR:-$PWD/var/stores}
_started_es=""
_started_milvus_pid=""

_host_of() { python3 -c 'import sys,urllib.parse as u; print(u.urlsplit(sys.argv[1]).hostname or "")' "$1"; }
_port_of() { python3 -c 'import sys,urllib.parse as u; print(u.urlsplit(sys.argv[1]).port or sys.argv[2])' "$1" "$2"; }
_is_local() { case "$1" in 127.*|localhost|::1) return 0 ;; *) return 1 ;; esac; }
_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
_es_answers() { curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null; }

_wait_for() {  # _wait_for NAME SECONDS COMMAND...
  local name=$1 seconds=$2; shift 2
  for _ in $(seq 1 $((seconds * 4))); do
    if "$@"; then return 0; fi
    sleep 0.25
  done
  echo "error: $name did not answer within ${seconds}s" >&2
  return 1
}

stores_up() {
  mkdir -p "$STORES_DIR"
  local es_url=${ELASTICSEARCH_URL:-http://127.0.0.1:9200}
  local es_host es_port
  es_host=$(_host_of "$es_url"); es_port=$(_port_of "$es_url" 9200)
  if _es_answers "$es_url"; then
    echo "==> Elasticsearch answers at $es_url"
  elif _is_local "$es_host"; then
    echo "==> starting the Elasticsearch stand-in (noida-db) on port $es_port"
    .venv/bin/noida-db up --only elasticsearch --elasticsearch-port "$es_port" \
      --host "$es_host" --data-dir "$STORES_DIR/elasticsearch" >"$STORES_DIR/noida-up.log" 2>&1 \
      || { cat "$STORES_DIR/noida-up.log" >&2; return 1; }
    _started_es="$STORES_DIR/elasticsearch"
    _wait_for Elasticsearch 60 _es_answers "$es_url"
  else
    echo "error: Elasticsearch at $es_url does not answer" >&2; return 1
  fi

  local milvus_uri=${MILVUS_URI:-http://127.0.0.1:19530}
  local mv_host mv_port
  mv_host=$(_host_of "$milvus_uri"); mv_port=$(_port_of "$milvus_uri" 19530)
  if _port_open "$mv_host" "$mv_port"; then
    echo "==> Milvus answers at $milvus_uri"
  elif _is_local "$mv_host"; then
    echo "==> starting Milvus (milvus-lite 2.5 server) on port $mv_port"
    .venv/bin/python scripts/local_milvus.py "$STORES_DIR/milvus25" "$mv_host:$mv_port" \
      >"$STORES_DIR/milvus.log" 2>&1 &
    _started_milvus_pid=$!
    _wait_for Milvus 60 _port_open "$mv_host" "$mv_port"
  else
    echo "error: Milvus at $milvus_uri does not answer" >&2; return 1
  fi
}

stores_down() {
  if [ -n "$_started_milvus_pid" ]; then
    echo "==> stopping Milvus (pid $_started_milvus_pid)"
    kill "$_started_milvus_pid" 2>/dev/null || true
    wait "$_started_milvus_pid" 2>/dev/null || true
    _started_milvus_pid=""
  fi
  if [ -n "$_started_es" ]; then
    echo "==> stopping the Elasticsearch stand-in"
    .venv/bin/noida-db down --data-dir "$_started_es" >/dev/null 2>&1 || true
    _started_es=""
  fi
}
