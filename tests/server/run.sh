#!/bin/sh
# The server_openai ctest: makes a tiny model and runs openai_test.mjs (the
# openai npm client against strata-server). The client is installed into
# WORK_DIR/npm. Exits 77 (skipped) without node >= 20, npm or the registry.
#   run.sh STRATA_SERVER STRATA_CLI WORK_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
server=$1 cli=$2 work=$3
mkdir -p "$work/npm"
cp "$here/package.json" "$here/openai_test.mjs" "$work/npm/"
cp "$here/../node/.npmrc" "$work/npm/.npmrc"
NPM_DIR=$work/npm
# A client left from an older pin is replaced.
pinned=$(sed -n 's/.*"openai": "\(.*\)".*/\1/p' "$here/package.json")
installed=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' "$NPM_DIR/node_modules/openai/package.json" 2>/dev/null)
[ -n "$installed" ] && [ "$installed" != "$pinned" ] && rm -rf "$NPM_DIR/node_modules/openai"
. "$here/../node/npm_env.sh"
require_node_package openai 20 || exit 77

model=$work/tiny.gguf
"$cli" make-model --shape tiny --layers 2 --vocab qwen3 -t 2 -o "$model" >/dev/null 2>&1 ||
  { echo "run.sh: strata make-model failed"; exit 1; }
# From the npm folder, so that the script's `import 'openai'` finds the package.
cd "$work/npm" && exec node openai_test.mjs "$server" "$cli" "$model"
