#!/bin/sh
# The gguf_npm_crosscheck ctest: a writer-made file is read by @huggingface/gguf
# and must match what was written. Usage: crosscheck.sh GGUF_MAKE_CORPUS WORK_DIR
# Exits 77 (skip) where node or npm is missing or the package cannot be installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
make_corpus=$1
work=$2

. "$here/npm_env.sh"
require_node_package @huggingface/gguf || exit 77

"$make_corpus" --crosscheck "$work" || exit 1
node "$here/gguf_check.mjs" "$work/crosscheck.gguf" "$work/crosscheck.expected.json" >"$work/crosscheck.actual.json"
rc=$?
[ "$rc" -eq 0 ] && echo "crosscheck: @huggingface/gguf read the file as written"
exit "$rc"
