# shellcheck shell=bash
# Helpers shared by scripts/test and scripts/demo: timed phases and the
# Release build. JOBS overrides the parallelism (default: nproc).

JOBS=${JOBS:-$(nproc)}
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS CTEST_PARALLEL_LEVEL=$JOBS

_phase_times=()
_phase_now=

# phase NAME COMMAND...: runs one command as a named phase and records its
# wall time; with set -e a failure ends the script, and the summary names it.
phase() {
  local name=$1 start=$SECONDS
  shift
  _phase_now=$name
  echo "==> $name"
  "$@"
  _phase_times+=("$(printf '%-32s %5ds' "$name" $((SECONDS - start)))")
  _phase_now=
}

# Prints the time of every finished phase, and which one failed; set as the
# EXIT trap by each script.
phase_summary() {
  local rc=$? line
  echo "==> wall time per phase"
  for line in "${_phase_times[@]}"; do echo "    $line"; done
  echo "    $(printf '%-32s %5ds' total "$SECONDS")"
  [ -n "$_phase_now" ] && echo "==> FAILED in phase: $_phase_now (exit $rc)" >&2
  return "$rc"
}

# release_build DIR: configures and builds the Release build; AUTO compiles
# the CUDA code wherever nvcc exists, with or without a GPU.
release_build() {
  phase "configure $1" cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=AUTO
  phase "build $1" cmake --build "$1"
}
