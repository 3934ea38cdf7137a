# Sourced by the npm-labelled ctest scripts. require_node_package NAME [NODE_MAJOR]
# returns non-zero (the caller exits 77: ctest skipped) unless node >= NODE_MAJOR
# (default 18) runs and NAME is installed under the npm folder, running `npm
# install` of package.json's pinned versions first when it is missing. The npm
# folder is tests/node, or $NPM_DIR (which holds its own package.json and
# .npmrc) for a test that keeps its packages in the build tree. Messages go to stdout.
npm_env_here=$(cd "$(dirname "$0")" && pwd)
npm_env_dir=${NPM_DIR:-$npm_env_here}

require_node_package() {
  if ! command -v node >/dev/null 2>&1; then echo "node not found: skipping"; return 1; fi
  min_node=${2:-18}
  if ! node -e "process.exit(Number(process.versions.node.split('.')[0]) >= $min_node ? 0 : 1)"; then
    echo "node $(node --version) is older than $min_node: skipping"; return 1
  fi
  [ -d "$npm_env_dir/node_modules/$1" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then echo "npm not found: skipping"; return 1; fi
  # One install at a time: ctest runs the npm tests in parallel.
  lock=""
  command -v flock >/dev/null 2>&1 && lock="flock $npm_env_dir/.npm-install.lock"
  [ -d "$npm_env_dir/node_modules/$1" ] && return 0
  if ! $lock timeout 240 npm install --prefix "$npm_env_dir" --no-audit --no-fund --no-package-lock \
      --fetch-retries=1 --fetch-timeout=30000 >"${TMPDIR:-/tmp}/strata-npm-install.log" 2>&1; then
    echo "npm install failed (registry unreachable?): skipping"
    tail -5 "${TMPDIR:-/tmp}/strata-npm-install.log"
    return 1
  fi
  [ -d "$npm_env_dir/node_modules/$1" ] || { echo "npm install did not provide $1: skipping"; return 1; }
}
