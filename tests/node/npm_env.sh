# Sourced by the npm-labelled ctest scripts. require_node_package NAME returns
# non-zero (the caller exits 77: ctest skipped) unless node >= 18 runs and NAME
# is installed under tests/node, running `npm install` of package.json's
# pinned versions first when it is missing. Messages go to stdout.
npm_env_here=$(cd "$(dirname "$0")" && pwd)

require_node_package() {
  if ! command -v node >/dev/null 2>&1; then echo "node not found: skipping"; return 1; fi
  if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
    echo "node $(node --version) is older than 18: skipping"; return 1
  fi
  [ -d "$npm_env_here/node_modules/$1" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then echo "npm not found: skipping"; return 1; fi
  # One install at a time: ctest runs the npm tests in parallel.
  lock=""
  command -v flock >/dev/null 2>&1 && lock="flock $npm_env_here/.npm-install.lock"
  [ -d "$npm_env_here/node_modules/$1" ] && return 0
  if ! $lock timeout 240 npm install --prefix "$npm_env_here" --no-audit --no-fund --no-package-lock \
      --fetch-retries=1 --fetch-timeout=30000 >"${TMPDIR:-/tmp}/strata-npm-install.log" 2>&1; then
    echo "npm install failed (registry unreachable?): skipping"
    tail -5 "${TMPDIR:-/tmp}/strata-npm-install.log"
    return 1
  fi
  [ -d "$npm_env_here/node_modules/$1" ] || { echo "npm install did not provide $1: skipping"; return 1; }
}
