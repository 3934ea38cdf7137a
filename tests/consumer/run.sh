#!/usr/bin/env bash
# install_consumer: installs a build into a fresh prefix, then builds and runs
# the C and C++ consumers against it with find_package(strata), and the C one
# again with pkg-config. Nothing internal (fmt, CUDA, strata_core) may leak.
# Usage: run.sh BUILD_DIR WORK_DIR LIBDIR   (CMAKE, CC, CXX from the environment)
set -euo pipefail
build=$1 work=$2 libdir=$3
here=$(cd "$(dirname "$0")" && pwd)
cmake=${CMAKE:-cmake}
prefix=$work/prefix

rm -rf "$work"
"$cmake" --install "$build" --prefix "$prefix"

echo "-- public headers and exported target name no internal dependency"
if grep -rnE '#[[:space:]]*include[[:space:]]*[<"](fmt|CLI|catch2|cuda|cublas)' "$prefix/include"; then
  echo "FAILED: an installed header includes an internal dependency" >&2
  exit 1
fi
if grep -nE 'strata_core|fmt::|CUDA::|Threads::|ZLIB::' "$prefix/$libdir"/cmake/strata/*.cmake; then
  echo "FAILED: the exported strata::strata drags internal dependencies into consumers" >&2
  exit 1
fi

for lang in c cpp; do
  echo "-- $lang consumer with find_package(strata)"
  "$cmake" -S "$here/$lang" -B "$work/$lang" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
  "$cmake" --build "$work/$lang"
  "$work/$lang/consumer"   # finds libstrata through the RPATH CMake gives it
done

echo "-- C consumer with pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
version=$(pkg-config --modversion strata)
# The flags are word lists: split them on purpose.
# shellcheck disable=SC2046
"${CC:-cc}" -std=c11 -Wall -Wextra -pedantic -Werror -DEXPECTED_VERSION="\"$version\"" \
  "$here/c/consumer.c" $(pkg-config --cflags --libs strata) -o "$work/pkg-config-consumer"
LD_LIBRARY_PATH=$prefix/$libdir "$work/pkg-config-consumer"
