#!/usr/bin/env bash
# Install everything, start the local stores the tests need (if not running), run the tests.
# Extra arguments go to pytest, e.g. ./scripts/test.sh tests/transcripts -x
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh

# The TypeScript client's dev dependencies (typescript, openapi-typescript) for its tests in
# tests/clients; reinstalled only when its package-lock.json changed.
ts_client=clients/typescript
ts_stamp="$ts_client/node_modules/.installed-$(sha256sum <"$ts_client/package-lock.json" | cut -c1-16)"
if [ ! -f "$ts_stamp" ]; then
  echo "==> installing the TypeScript client's dev dependencies (npm ci)"
  if (cd "$ts_client" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error); then
    touch "$ts_stamp"
  else
    echo "warning: npm ci failed; the TypeScript client's tests will fail" >&2
  fi
fi

# The admin walkthrough (tests/browser) drives Chromium and ChromeDriver from the Debian packages,
# with a CJK font (fonts-noto-cjk) so Chinese text in its screenshots is not drawn as boxes; the
# front proxy's configuration (docs/proxy/nginx.conf) is tried with nginx.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing+=(fonts-noto-cjk)
[ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing ${missing[*]} for the browser walkthrough and the front proxy test"
  apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
  [ "$(id -u)" -eq 0 ] || apt=(sudo -n "${apt[@]}")
  { "${apt[@]}" update -qq &&
    "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"; } ||
    echo "warning: ${missing[*]} could not be installed (needs root); their tests will fail" >&2
fi

# shellcheck source=scripts/stores.sh
source scripts/stores.sh
trap stores_down EXIT
stores_up

set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
exit $status
