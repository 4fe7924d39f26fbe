#!/bin/sh
# In-process A/B of two release builds of rvis on a bench scene (see README.md).
#   tools/ab/ab.sh NEW_BUILD_DIR OLD_BUILD_DIR crates|city|map|mapfeed|occlusion FRAMES [scene arguments]
# e.g. tools/ab/ab.sh build-new build-old city 1800 generation
#      tools/ab/ab.sh build-new build-old crates 1800 100000 1 2
#      tools/ab/ab.sh build-new build-old map 1200 oa_dm4 1
#      tools/ab/ab.sh build-new build-old occlusion 1800 256 tests
#      tools/ab/ab.sh build-new build-old mapfeed 916 oa_dm5
set -eu
[ $# -ge 4 ] || { sed -n 2,6p "$0" >&2; exit 2; }
NEW=$(cd "$1" && pwd); OLD=$(cd "$2" && pwd); SCENE=$3; shift 3
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
case $SCENE in crates|city|map|mapfeed|occlusion) ;; *) echo "ab.sh: scene is crates, city, map, mapfeed or occlusion" >&2; exit 2 ;; esac
if [ "$SCENE" = map ] || [ "$SCENE" = mapfeed ]; then
    [ -f "$NEW/examples/librvis-walk-parts.a" ] ||
        { echo "ab.sh: $NEW/examples/librvis-walk-parts.a missing (configure with -Dexamples=enabled; needs libzip)" >&2; exit 2; }
fi
for b in "$NEW" "$OLD"; do
    [ -f "$b/src/librvis.a" ] || { echo "ab.sh: $b/src/librvis.a missing (configure with -Ddefault_library=both or static)" >&2; exit 2; }
done
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# The old build's every global symbol gets the prefix old_ (and its callers' names with it).
nm -g --defined-only "$OLD/src/librvis.a" | awk 'NF == 3 { print $3 }' | sort -u > "$T/syms"
awk '{ print $1 " old_" $1 }' "$T/syms" > "$T/redefine"
awk '/^rv_/ { print "#define " $1 " old_" $1 }' "$T/syms" > "$T/prefix.h"
objcopy --redefine-syms="$T/redefine" "$OLD/src/librvis.a" "$T/libold.a"
CC=${CC:-cc}
FLAGS="-O2 -std=c11 -D_GNU_SOURCE -I$ROOT/include -I$ROOT/bench -w"
EXTRA_NEW= EXTRA_OLD= LIBS=
if [ "$SCENE" = map ] || [ "$SCENE" = mapfeed ]; then
    # The walk's drive calls rvis: one copy per side, the old one's names renamed as the
    # library's. The walk's parts (reading, path, views) do not: both sides share them.
    WALK="$ROOT/examples/walk"
    FLAGS="$FLAGS -D_DEFAULT_SOURCE -DRVW_HAVE_ZIP -I$WALK"
    for f in drive drive_occluders; do
        $CC $FLAGS -c "$WALK/$f.c" -o "$T/new_$f.o"
        $CC $FLAGS -c -include "$T/prefix.h" "$WALK/$f.c" -o "$T/old_$f.o"
    done
    nm -g --defined-only "$T/old_drive.o" "$T/old_drive_occluders.o" | awk 'NF == 3 { print $3 " old_" $3 }' > "$T/drive_syms"
    for f in drive drive_occluders; do objcopy --redefine-syms="$T/drive_syms" "$T/old_$f.o"; done
    awk '{ print "#define " $1 " " $2 }' "$T/drive_syms" >> "$T/prefix.h"
    EXTRA_NEW="$T/new_drive.o $T/new_drive_occluders.o" EXTRA_OLD="$T/old_drive.o $T/old_drive_occluders.o"
    LIBS="$NEW/examples/librvis-walk-parts.a -lzip"
fi
$CC $FLAGS -c "-DSIDE(x)=new_##x" "$HERE/side_$SCENE.c" -o "$T/new.o"
$CC $FLAGS -c -include "$T/prefix.h" -Drvb_crates=old_rvb_crates -Drvb_frame=old_rvb_frame "-DSIDE(x)=old_##x" \
    "$HERE/side_$SCENE.c" -o "$T/old.o"
$CC $FLAGS "$HERE/main.c" "$T/new.o" "$T/old.o" $EXTRA_NEW $EXTRA_OLD "$ROOT/bench/bench_util.c" \
    "$ROOT/bench/bench_jobs.c" "$NEW/src/librvis.a" "$T/libold.a" $LIBS -lm -lpthread -o "$T/ab"
[ -n "${AB_KEEP:-}" ] && cp "$T/ab" "$AB_KEEP"
"$T/ab" "$@"
