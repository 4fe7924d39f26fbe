#!/bin/bash
# Long fuzz runs of every target on one version of the code, logged for the measurement
# history (docs/reliability.md, "Long fuzz runs").
#
#   tools/fuzz_long.sh                                 # 2 h or 10,000,000 executions a target
#   tools/fuzz_long.sh --seconds 600 --runs 1000000 --out /tmp/fz
#   tools/fuzz_long.sh --targets fuzz_journal,fuzz_bsp --corpus-from /tmp/fz-old
#
# It builds the targets from the checkout in a fresh directory (clang, libFuzzer,
# address/undefined sanitizers, -O2), copies the binaries aside (a rebuild during the run
# changes nothing under it), then runs every target at once, each under `nice` and
# /usr/bin/time, until it reaches --runs executions or --seconds seconds, whichever comes
# first. New inputs go to OUT/corpus/<target> (seeded from --corpus-from when given), never
# into the committed seeds; crashes, leaks and timeouts to OUT/<target>-crash-* etc.
# At the end it prints one table row per target: executions, executions a second, wall and
# CPU seconds, exit status and artifacts written. Exit code: 1 when any target found
# something (or did not run), 0 otherwise.
set -u -o pipefail

seconds=7200 runs=10000000 out= corpus_from= nice_level=19 timeout=60
targets=fuzz_world,fuzz_occlusion,fuzz_journal,fuzz_bsp
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --corpus-from) corpus_from=$2; shift 2 ;;
    --nice) nice_level=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fuzz_long.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$(mktemp -d /tmp/rvis-fuzz-long.XXXXXX)}
mkdir -p "$out/bin" "$out/corpus"
build=$out/build
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$src" status --porcelain -- src include tests/fuzz examples/walk 2>/dev/null | head -1)

echo "fuzz_long: $commit${dirty:+ (uncommitted changes under src/include/tests/fuzz/examples/walk)}, out $out"
if [ ! -x "$build/tests/fuzz/fuzz_world" ]; then
    CC=clang meson setup "$build" "$src" -Dfuzz=enabled -Dbuildtype=debugoptimized \
        -Dtests=disabled -Dbench=disabled -Dexamples=disabled >"$out/setup.log" 2>&1 ||
        { echo "fuzz_long: configure failed (clang with libFuzzer needed), see $out/setup.log" >&2; exit 2; }
fi
ninja -C "$build" >"$out/build.log" 2>&1 || { echo "fuzz_long: build failed, see $out/build.log" >&2; exit 2; }

IFS=, read -r -a list <<<"$targets"
for t in "${list[@]}"; do
    [ -x "$build/tests/fuzz/$t" ] || { echo "fuzz_long: no target $t" >&2; exit 2; }
    cp "$build/tests/fuzz/$t" "$out/bin/"
    mkdir -p "$out/corpus/$t"
    # fuzz_bsp's seeds are cut from real maps by the target itself into an empty directory.
    from=$corpus_from/$t
    [ "$t" = fuzz_bsp ] && from=$corpus_from/corpus_bsp
    if [ -n "$corpus_from" ] && [ -d "$from" ]; then
        cp -n "$from"/* "$out/corpus/$t/" 2>/dev/null
    fi
done

run_one() { # target
    local t=$1 extra=() seeds=()
    if [ "$t" = fuzz_bsp ]; then
        extra=(-max_len=131072)
    else
        seeds=("$src/tests/fuzz/corpus/$t")
    fi
    date -u +"%FT%TZ" >"$out/$t.start"
    /usr/bin/time -v -o "$out/$t.time" nice -n "$nice_level" "$out/bin/$t" \
        -runs="$runs" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$out/$t-" "${extra[@]}" \
        "$out/corpus/$t" "${seeds[@]}" >"$out/$t.log" 2>&1
    echo $? >"$out/$t.rc"
    date -u +"%FT%TZ" >"$out/$t.end"
}
for t in "${list[@]}"; do run_one "$t" & done
wait

status=0
printf '| target | code | executions | exec/s | wall s | cpu s | exit | artifacts |\n|---|---|---|---|---|---|---|---|\n'
for t in "${list[@]}"; do
    execs=$(grep -a 'stat::number_of_executed_units' "$out/$t.log" | awk '{print $2}')
    rate=$(grep -a 'stat::average_exec_per_sec' "$out/$t.log" | awk '{print $2}')
    wall=$(( $(date -d "$(cat "$out/$t.end")" +%s) - $(date -d "$(cat "$out/$t.start")" +%s) ))
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.0f", s}' "$out/$t.time")
    rc=$(cat "$out/$t.rc")
    arts=$(find "$out" -maxdepth 1 -name "$t-*" | wc -l)
    printf '| `%s` | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$commit" "${execs:-?}" "${rate:-?}" "$wall" "$cpu" "$rc" "$arts"
    [ "$rc" = 0 ] && [ "$arts" = 0 ] && [ -n "$execs" ] || status=1
done
exit $status
