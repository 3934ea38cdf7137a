#!/bin/sh
# The gguf_npm_crosscheck ctest: a writer-made file is read by @huggingface/gguf
# and must match what was written. Usage: crosscheck.sh GGUF_MAKE_CORPUS WORK_DIR
# Exits 77 (skip) where node or npm is missing or the package cannot be installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
make_corpus=$1
work=$2

if ! command -v node >/dev/null 2>&1; then
  echo "crosscheck: node not found; skipping"
  exit 77
fi
if [ ! -d "$here/node_modules/@huggingface/gguf" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "crosscheck: npm not found; skipping"
    exit 77
  fi
  # The version is pinned in package.json.
  if ! timeout 240 npm install --prefix "$here" --no-audit --no-fund --no-package-lock >"$work.npm.log" 2>&1; then
    echo "crosscheck: npm install failed (registry unreachable?); skipping"
    tail -5 "$work.npm.log"
    exit 77
  fi
fi

"$make_corpus" --crosscheck "$work" || exit 1
node "$here/gguf_check.mjs" "$work/crosscheck.gguf" "$work/crosscheck.expected.json" >"$work/crosscheck.actual.json"
rc=$?
[ "$rc" -eq 0 ] && echo "crosscheck: @huggingface/gguf read the file as written"
exit "$rc"
