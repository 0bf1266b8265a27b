#!/usr/bin/env bash
# The cost of starting a program from a process with a large heap: posix_spawn (what flint serve
# does), vfork + exec, fork + exec (what forking servers do), for each heap size in MIBS.
#
# bench/spawn.c maps and writes MIB MiB, then starts PROGRAM STARTS times each way (modes
# alternated over ROUNDS rounds), waiting for each; pinned to SERVER_CPU. PROGRAM is a static C
# program that exits at once (so the figure is the start, not the program), or PROGRAM=path.
#
# Environment: MIBS ("0 64 256 1024"), STARTS (1000), ROUNDS (5), PROGRAM, SERVER_CPU, KEEP_WORK.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MIBS=${MIBS:-0 64 256 1024}
STARTS=${STARTS:-1000}
ROUNDS=${ROUNDS:-5}
for m in $MIBS; do [[ $m =~ ^[0-9]+$ ]] || die "MIBS: '$m' is not a number of MiB"; done
[[ $STARTS =~ ^[1-9][0-9]*$ ]] || die "STARTS must be a positive number"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
((STARTS % ROUNDS == 0)) || die "ROUNDS must divide STARTS"

bench_init
gcc -O2 -Wall -o "$WORK/spawn" "$BENCH_DIR/spawn.c" || die "cannot build bench/spawn.c"
if [[ -z ${PROGRAM:-} ]]; then
    PROGRAM="$WORK/true"
    echo 'int main(void) { return 0; }' >"$WORK/true.c"
    gcc -O2 -static -o "$PROGRAM" "$WORK/true.c" 2>"$WORK/true.log" ||
        die "cannot link a static program (libc.a missing? set PROGRAM=/bin/true)"
fi
[[ -x $PROGRAM ]] || die "PROGRAM: $PROGRAM is not executable"

echo "== starting a program: posix_spawn, vfork + exec, fork + exec; $STARTS starts each" \
    "($ROUNDS rounds, modes alternated), pinned to CPU $SERVER_CPU"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   kernel: $(uname -r)   cpus: $(nproc)" \
    "  loadavg: $(cut -d' ' -f1-3 /proc/loadavg)   program: $PROGRAM"
echo "(medians over rounds, us per start; parent = the starting process, children = the started"
echo " one (exec, run, exit; a forked child also tears down its copy of the page tables))"
echo
printf '%-8s  %-11s  %10s  %10s  %12s  %10s  %14s\n' "heap MiB" mode "wall" "parent CPU" \
    "children CPU" "total CPU" "total/spawn"
printf '%-8s  %-11s  %10s  %10s  %12s  %10s  %14s\n' -------- ----------- ---------- \
    ---------- ------------ ---------- --------------
for m in $MIBS; do
    taskset -c "$SERVER_CPU" "$WORK/spawn" "$m" "$STARTS" "$ROUNDS" "$PROGRAM" >"$WORK/out" ||
        die "spawn $m MiB failed"
    base=""
    while read -r mode mib _ wall self kids; do
        total=$(awk -v a="$self" -v b="$kids" 'BEGIN { printf "%.1f", a + b }')
        [[ -n $base ]] || base=$total
        printf '%-8s  %-11s  %10s  %10s  %12s  %10s  %14s\n' "$mib" "$mode" "$wall" "$self" \
            "$kids" "$total" "$(awk -v a="$total" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
    done <"$WORK/out"
done
