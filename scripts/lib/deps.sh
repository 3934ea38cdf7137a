# shellcheck shell=bash
# Installs the Debian packages libstrata builds and tests with, only those
# missing. Sourced by scripts/test and scripts/demo. STRATA_NO_INSTALL=1 only
# reports what is missing (for a machine without network).

# "package" or "package:command": present when dpkg lists the package as
# installed, or when the command is on PATH (a cmake or node from elsewhere).
STRATA_DEPS=(build-essential:g++ cmake:cmake pkg-config:pkg-config libfmt-dev libcli11-dev catch2
             zlib1g-dev clang:clang libclang-rt-dev)
# Without these, the tests that need them skip (and without cpp-httplib or
# nlohmann-json, strata-server is not built).
STRATA_DEPS_OPTIONAL=(nodejs:node npm:npm libcpp-httplib-dev nlohmann-json3-dev python3:python3)

_deps_updated=

# deps_missing ENTRY...: prints the package of each entry that is not present.
deps_missing() {
  local entry pkg cmd
  for entry in "$@"; do
    pkg=${entry%%:*} cmd=${entry#*:}
    [ "$cmd" != "$entry" ] && command -v "$cmd" >/dev/null && continue
    dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' && continue
    echo "$pkg"
  done
}

# deps_apt_install PACKAGE...: apt-get install, as root or through sudo;
# runs apt-get update first, once.
deps_apt_install() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root or sudo to install: $*" >&2; return 1; }
    sudo=(sudo)
  fi
  if [ -z "$_deps_updated" ]; then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    _deps_updated=1
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# deps_install: installs the missing required packages (an error if that
# fails) and tries the missing optional ones (a warning if that fails).
deps_install() {
  if ! command -v dpkg-query >/dev/null; then
    echo "deps: not a Debian system; install the packages README.md lists by hand" >&2
    return 0
  fi
  local missing optional
  mapfile -t missing < <(deps_missing "${STRATA_DEPS[@]}")
  mapfile -t optional < <(deps_missing "${STRATA_DEPS_OPTIONAL[@]}")
  if [ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
    echo "deps: all packages present"
  elif [ -n "${STRATA_NO_INSTALL:-}" ]; then
    echo "deps: STRATA_NO_INSTALL is set; not installing: ${missing[*]} ${optional[*]}" >&2
  else
    if [ ${#missing[@]} -gt 0 ]; then
      echo "deps: installing ${missing[*]}"
      deps_apt_install "${missing[@]}"
    fi
    if [ ${#optional[@]} -gt 0 ]; then
      echo "deps: installing (optional) ${optional[*]}"
      deps_apt_install "${optional[@]}" ||
        echo "deps: could not install ${optional[*]}; the tests that need them will skip" >&2
    fi
  fi
}
