#!/bin/sh
# Bad option values give a clear error and a non-zero exit, never a crash: sizes (--vram-budget) and counts
# (--prompt, --make LAYERS); the server's --max-body, checked before the model loads.
# Usage: bad_options.sh STRATA_BIN [SERVER_BIN]
strata=${1:?usage: bad_options.sh STRATA_BIN [SERVER_BIN]}
server=${2:-}
failed=0
expect() {  # expect MESSAGE ARGS...: the command fails with exit status 1 and prints MESSAGE
  want=$1
  shift
  out=$("$bin" "$@" 2>&1)
  rc=$?
  case $out in
    *"$want"*) [ $rc -eq 1 ] || { echo "FAIL (exit $rc, want 1): $bin $*"; failed=1; } ;;
    *) echo "FAIL: $bin $*: want '$want' in:"; echo "$out" | tail -n 3; failed=1 ;;
  esac
}
bin=$strata
expect "size '99999999999999999999999': above 2^64 - 1 bytes" bench --make tiny --vram-budget 99999999999999999999999
expect "size '1e3': unknown unit 'e3'" bench --make tiny --vram-budget 1e3
expect "size 'abc': no number" bench --make tiny --vram-budget abc
expect "size '-4GiB': negative" bench --make tiny --vram-budget=-4GiB
expect "--prompt: 'x' is not a whole number" bench --make tiny --prompt 8,x
expect "--prompt: '0' is not in [1, 2147483647]" bench --make tiny --prompt 0
expect "--prompt: '99999999999' is not in [1, 2147483647]" bench --make tiny --prompt 99999999999
expect "--make LAYERS: '2x' is not a whole number" bench --make tiny:2x
if [ -n "$server" ]; then
  bin=$server
  expect "size '1e99': unknown unit 'e99'" -m /nonexistent.gguf --max-body 1e99
  expect "size '99999999999999999999999': above 2^64 - 1 bytes" -m /nonexistent.gguf --max-body 99999999999999999999999
fi
[ $failed -eq 0 ] && echo "bad_options: all passed"
exit $failed
