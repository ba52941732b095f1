#!/usr/bin/env bash
# Installs everything keel's build and tests need, from Debian's packages (and npm for the
# end-to-end client). Idempotent, non-interactive; skips what is already present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  clang libclang-rt-14-dev          # libFuzzer + sanitizer runtimes
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libpcre2-dev
)
# Node.js + npm: a machine may carry its own build (e.g. nodesource, which bundles npm and
# conflicts with Debian's npm package); install Debian's only when there is none.
if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# The official OpenAI client for end-to-end tests (tests/e2e), installed locally.
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -f "$root/tests/e2e/package.json" ] && [ ! -d "$root/tests/e2e/node_modules/openai" ]; then
  echo "setup: installing npm packages for tests/e2e"
  # Offline or registry trouble must not stop the build: the e2e tests then skip (exit 77).
  (cd "$root/tests/e2e" && npm install --no-audit --no-fund --silent --prefer-offline) ||
    echo "setup: npm install failed (offline?); the e2e tests will be skipped" >&2
fi
