#!/usr/bin/env bash
# Bundles the build dependencies that a GPU machine without package installs
# lacks (GoogleTest, CLI11, hiredis, OpenSSL's headers and libcrypto) from
# this machine's packages into a prefix, by default ./.gpu/deps/usr (.gpu/ is
# ignored by git). On the GPU machine, with the checkout and the bundle there:
#   export CMAKE_PREFIX_PATH=$PWD/.gpu/deps/usr OPENSSL_ROOT_DIR=$PWD/.gpu/deps/usr
#   export PKG_CONFIG_PATH=$PWD/.gpu/deps/usr/lib/x86_64-linux-gnu/pkgconfig
# then configure and build as usual (scripts/gpu-check.sh does). Both machines
# must be x86-64 Linux; run scripts/install-deps.sh here first.
#
# usage: scripts/device-deps.sh [PREFIX]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/.gpu/deps/usr}
arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
arch=${arch/-pc-/-} # x86_64-pc-linux-gnu -> x86_64-linux-gnu
libdir=/usr/lib/$arch
[[ -d $libdir ]] || { echo "device-deps: error: no $libdir" >&2; exit 1; }
for header in gtest/gtest.h gmock/gmock.h CLI/CLI.hpp hiredis/hiredis.h openssl/evp.h; do
  [[ -e /usr/include/$header ]] || { echo "device-deps: error: /usr/include/$header missing: run scripts/install-deps.sh" >&2; exit 1; }
done

rm -rf "$prefix"
mkdir -p "$prefix/include" "$prefix/lib/$arch/cmake" "$prefix/lib/$arch/pkgconfig"
cp -r /usr/include/gtest /usr/include/gmock /usr/include/CLI /usr/include/hiredis /usr/include/openssl "$prefix/include/"
# OpenSSL's configuration headers live under the multiarch include dir.
[[ -d /usr/include/$arch/openssl ]] && cp /usr/include/"$arch"/openssl/* "$prefix/include/openssl/"
# GoogleTest's CMake package finds its libraries relative to itself.
cp -r "$libdir/cmake/GTest" "$prefix/lib/$arch/cmake/"
cp "$libdir"/libgtest*.a "$libdir"/libgmock*.a "$prefix/lib/$arch/"
cp -a "$libdir"/libhiredis.so* "$libdir"/libcrypto.so* "$prefix/lib/$arch/"
version=$(pkg-config --modversion hiredis 2>/dev/null || echo 0)
cat >"$prefix/lib/$arch/pkgconfig/hiredis.pc" <<PC
prefix=\${pcfiledir}/../../..
libdir=\${prefix}/lib/$arch
includedir=\${prefix}/include/hiredis
Name: hiredis
Description: Minimalistic C client library for Redis.
Version: $version
Libs: -L\${libdir} -lhiredis
Cflags: -I\${includedir} -D_FILE_OFFSET_BITS=64
PC
echo "device-deps: $(du -sh "$prefix" | cut -f1) in $prefix"
