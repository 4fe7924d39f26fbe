#!/usr/bin/env bash
# Builds and runs a tiny consumer of rvis by every route the README shows, as a host's own
# build would: pkg-config (shared and static), CMake's find_package (shared, static, C++11
# to C++20) and a meson subproject (default, static, install on request).
#
#   tests/consumers/run.sh WORKDIR     (WORKDIR is emptied and filled with build trees)
#
# rvis is configured from this source tree, installed into WORKDIR/prefix, and each
# consumer is built against that prefix alone. Any failure stops the script (exit 1).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
here="$src/tests/consumers"
work="${1:?usage: run.sh WORKDIR}"
rm -rf "$work"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
prefix="$work/prefix"

say() { echo "-- $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
# quiet LOG COMMAND...: runs COMMAND with its output in LOG, shown only when it fails
quiet() { local log="$1"; shift; "$@" >"$log" 2>&1 || { cat "$log"; fail "$*"; }; }
# needs FILE LIB: FILE's dynamic section names LIB (a shared link)
# (grep reads the whole listing: grep -q stops at the first match, and under pipefail the
# SIGPIPE it leaves readelf would fail a check that passed)
needs() { readelf -d "$1" | grep "NEEDED.*\[$2" >/dev/null || fail "$1 does not load $2"; }
# needs_not FILE LIB: FILE does not load LIB (a static link)
needs_not() { if readelf -d "$1" | grep "NEEDED.*\[$2" >/dev/null; then fail "$1 loads $2"; fi; }

say "install rvis into $prefix"
# As a strict host builds its dependencies: every warning of warning_level 3 (-Wpedantic
# included) is an error.
quiet "$work/rvis.log" meson setup "$work/rvis" "$src" --prefix="$prefix" --libdir=lib --buildtype=release \
    -Dwarning_level=3 -Dwerror=true -Dtests=disabled -Dexamples=disabled -Dbench=disabled -Dfuzz=disabled
quiet "$work/rvis.log" ninja -j 2 -C "$work/rvis"
quiet "$work/rvis.log" meson install -C "$work/rvis"
for f in include/rvis.h include/rvis/core.h lib/librvis.a lib/librvis.so lib/pkgconfig/rvis.pc \
         lib/cmake/rvis/rvisConfig.cmake lib/cmake/rvis/rvisConfigVersion.cmake share/licenses/rvis/LICENSE \
         share/doc/rvis/README.md share/doc/rvis/docs/occlusion.md; do
    [ -e "$prefix/$f" ] || fail "meson install did not install $f"
done
# Every relative link of the installed guides leads to an installed file (a link into the
# source tree, ../tools say, would be dead where a user reads them).
for md in $(find "$prefix/share/doc/rvis" -name '*.md'); do
    for target in $(grep -o '\]([^)#]*' "$md" | sed 's/^](//' | grep -v '^[a-z]*:' | grep -v '^$'); do
        [ -e "$(dirname "$md")/$target" ] ||
            fail "the installed ${md#"$prefix"/} links to $target, which is not installed"
    done
done
# Before 1.0 the soname carries major.minor: a library of another minor version (another
# ABI) is refused by the loader.
version="$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/rvis.pc")"
soname="librvis.so.${version%.*}"
readelf -d "$prefix/lib/librvis.so" | grep "SONAME.*\[$soname\]" >/dev/null ||
    fail "librvis.so's soname is not $soname: $(readelf -d "$prefix/lib/librvis.so" | grep SONAME)"

# pkg-config sees only this prefix: a Requires on anything else (cglm) would fail here.
export PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig"
unset PKG_CONFIG_PATH
cflags="-std=c99 -Wall -Wextra -pedantic -Werror"

say "pkg-config, shared: $(pkg-config --cflags --libs rvis)"
cc $cflags $(pkg-config --cflags rvis) "$here/consumer.c" -o "$work/pc-shared" $(pkg-config --libs rvis)
needs "$work/pc-shared" librvis.so
LD_LIBRARY_PATH="$prefix/lib" "$work/pc-shared"

say "pkg-config, static: $(pkg-config --static --libs rvis)"
# -static: every library from its archive, so whatever the archive needs (libm) must come
# from Libs.private
cc -static $cflags $(pkg-config --static --cflags rvis) "$here/consumer.c" -o "$work/pc-static" \
    $(pkg-config --static --libs rvis)
needs_not "$work/pc-static" librvis
"$work/pc-static"

say "CMake, find_package(rvis 0.2): rvis::rvis, rvis::rvis_static, C++11..20"
quiet "$work/cmake.log" cmake -S "$here/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
quiet "$work/cmake.log" cmake --build "$work/cmake" -j 2
needs "$work/cmake/consumer" librvis.so
needs_not "$work/cmake/consumer_static" librvis
"$work/cmake/consumer"
"$work/cmake/consumer_static"
for std in 11 14 17 20; do
    [ -x "$work/cmake/consumer_cxx$std" ] || fail "no C++$std consumer (no C++ compiler?)"
    "$work/cmake/consumer_cxx$std"
done

say "CMake: a request for a version this package is not (0.3) is refused"
if cmake -S "$here/cmake" -B "$work/cmake-0.3" -DCMAKE_PREFIX_PATH="$prefix" \
        -DRVIS_CONSUMER_VERSION=0.3 >"$work/cmake-0.3.log" 2>&1; then
    fail "find_package(rvis 0.3) accepted rvis $(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/rvis.pc")"
fi
grep -q "considered but not accepted" "$work/cmake-0.3.log" || fail "cmake refused 0.3 for another reason (see $work/cmake-0.3.log)"

unset PKG_CONFIG_LIBDIR
# A subproject consumer: its own directory with subprojects/rvis pointing at this tree.
# --force-fallback-for: an rvis installed on the machine must not stand in for it.
subproject() {
    local name="$1"; shift
    local dir="$work/sub-$name"
    mkdir -p "$dir/subprojects"
    cp "$here/subproject/meson.build" "$here/consumer.c" "$dir/"
    ln -s "$src" "$dir/subprojects/rvis"
    quiet "$dir/build.log" meson setup "$dir/build" "$dir" --force-fallback-for=rvis "$@"
    quiet "$dir/build.log" ninja -j 2 -C "$dir/build"
    # a subproject builds the library and nothing else of rvis
    for part in tests examples bench; do
        [ ! -e "$dir/build/subprojects/rvis/$part" ] || fail "the subproject built its $part ($name)"
    done
    quiet "$dir/build.log" meson install -C "$dir/build" --destdir "$dir/installed"
    (cd "$dir/build" && ./consumer)
}

say "meson subproject, defaults: links the archive, installs only the consumer, which runs installed"
subproject default
needs_not "$work/sub-default/build/consumer" librvis
leaked="$(cd "$work/sub-default/installed" && find . -type f -o -type l | grep -v '/consumer$' || true)"
[ -z "$leaked" ] || fail "the subproject installed files its parent did not ask for: $leaked"
"$(find "$work/sub-default/installed" -name consumer -type f)"

say "meson subproject, -Drvis:default_library=static: links the archive"
subproject static -Drvis:default_library=static
needs_not "$work/sub-static/build/consumer" librvis

say "meson subproject, -Drvis:install=enabled: links the shared library it installs, with headers and rvis.pc"
subproject install -Drvis:install=enabled
needs "$work/sub-install/build/consumer" librvis.so
for f in rvis.h rvis/core.h librvis.so rvis.pc rvisConfig.cmake; do
    [ -n "$(find "$work/sub-install/installed" -name "$(basename "$f")")" ] || fail "-Drvis:install=enabled did not install $f"
done

say "every consumer built and ran"
