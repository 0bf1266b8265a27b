#!/usr/bin/env bash
# The server's speed: flint serve against nginx (and floor.c, the floor), same files.
#
# Each server runs as one process pinned to SERVER_CPU; the load generator runs pinned to
# CLIENT_CPU. For each case, the servers take turns (A B C A B C ...) for ROUNDS rounds; then each
# is run once more under a syscall counter (perf or strace: a separate run, because tracing slows
# the server and its CPU figure must not include that). Reported per case: medians of requests/s
# and server CPU per request (utime+stime from /proc/PID/stat over the load's window / responses),
# syscalls per request, and the ratios to nginx.
#
# Cases (CASES, default all but tls): ka (1 KiB keep-alive), pipe (1 KiB pipelined DEPTH deep),
# http10 (1 KiB, a connection per request), bw (bandwidth for each of BW_SIZES), tls (HTTPS with
# one ECDSA P-256 certificate the script makes, wrk over https against nginx and flint:
# tls-ka 1 KiB keep-alive, tls-close 1 KiB with a full handshake per request, tls-1m 1 MiB).
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), CASES ("ka pipe http10 bw"), SERVERS ("nginx
# flint floor"), LOAD (load generator for ka and bw: wrk | flint; default wrk), PIPE_LOAD ("flint
# wrk"), HTTP10_LOAD ("flint wrk"), DEPTH (16), BW_DUR (3s), BW_SIZES ("500 1k 2k 3k 5k 7k 10k 15k
# 20k 50k 100k 200k 1m"), SYSCALLS (auto | perf | strace | none), SYS_DUR (3s), BW_SYSCALLS (0),
# FLINT, RESULTS (1: results/server-DATE.json; or a file name), SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
CASES=${CASES:-ka pipe http10 bw}
SERVERS=${SERVERS:-nginx flint floor}
LOAD=${LOAD:-wrk}
PIPE_LOAD=${PIPE_LOAD:-flint wrk}
HTTP10_LOAD=${HTTP10_LOAD:-flint wrk}
DEPTH=${DEPTH:-16}
BW_DUR=${BW_DUR:-3s}
BW_SIZES=${BW_SIZES:-500 1k 2k 3k 5k 7k 10k 15k 20k 50k 100k 200k 1m}
SYSCALLS=${SYSCALLS:-auto}
SYS_DUR=${SYS_DUR:-3s}
BW_SYSCALLS=${BW_SYSCALLS:-0}

# Check every setting before anything starts.
for d in "$DUR" "$BW_DUR" "$SYS_DUR"; do seconds "$d" >/dev/null; done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a positive number"
[[ $DEPTH =~ ^[1-9][0-9]*$ ]] || die "DEPTH must be a positive number"
uses_flint=0
for s in $SERVERS; do
    case $s in
    nginx | floor) ;;
    flint) uses_flint=1 ;;
    *) die "unknown server '$s' in SERVERS (nginx, flint, floor)" ;;
    esac
done
[[ " $SERVERS " == *" nginx "* ]] || die "SERVERS must include nginx: every ratio is to nginx"
for c in $CASES; do
    case $c in
    ka | bw) loads=$LOAD ;;
    pipe) loads=$PIPE_LOAD ;;
    http10) loads=$HTTP10_LOAD ;;
    tls) loads=wrk ;; # flint bench speaks no HTTPS yet
    *) die "unknown case '$c' in CASES (ka, pipe, http10, bw, tls)" ;;
    esac
    [[ -n "$loads" ]] || die "no load generator for case $c"
    for l in $loads; do
        case $l in
        wrk) need wrk ;;
        flint) uses_flint=1 ;;
        *) die "unknown load generator '$l' for case $c (wrk, flint)" ;;
        esac
    done
done
for z in $BW_SIZES; do
    [[ " 500 1k 2k 3k 5k 7k 10k 15k 20k 50k 100k 200k 1m " == *" $z "* ]] ||
        die "BW_SIZES: '$z' is not one of 500 1k 2k 3k 5k 7k 10k 15k 20k 50k 100k 200k 1m"
done
((uses_flint == 0)) || need_flint

bench_init
need "$NGINX"
case $SYSCALLS in
auto) SYSCALLS=$("${MEASURE[@]}" syscall-tool) ;;
perf) need perf ;;
strace) need strace ;;
none) ;;
*) die "SYSCALLS: auto, perf, strace or none" ;;
esac
records="$WORK/records.jsonl"
out_json=$(results_path server)
docs="$WORK/docs"
make_docroot "$docs"
# One page of DEPTH copies of the 1 KiB file, in the WebSTONE filelist format, for --pipeline.
{
    echo 1
    echo "1 $DEPTH"
    for ((i = 0; i < DEPTH; i++)); do echo /1k.bin; done
} >"$WORK/pipe.filelist"

declare -A PID PORT
start_nginx "$docs"
PID[nginx]=$NGINX_PID PORT[nginx]=$NGINX_PORT
if [[ " $SERVERS " == *" flint "* ]]; then
    start_flint "$docs"
    PID[flint]=$FLINT_PID PORT[flint]=$FLINT_PORT
fi
if [[ " $CASES " == *" tls "* ]]; then
    # The same certificate for both: ECDSA P-256, as the TLS comparison asks.
    make_cert "$WORK/tls"
    start_nginx "$docs" "$WORK/tls"
    PID[nginx-tls]=$NGINX_PID PORT[nginx-tls]=$NGINX_PORT
    if [[ " $SERVERS " == *" flint "* ]]; then
        start_flint "$docs" "$WORK/tls"
        PID[flint-tls]=$FLINT_PID PORT[flint-tls]=$FLINT_PORT
    fi
fi
if [[ " $SERVERS " == *" floor "* ]]; then
    build_floor
    start_floor
    PID[floor]=$FLOOR_PID PORT[floor]=$FLOOR_PORT
fi

echo "== server benchmark: $SERVERS; cases: $CASES; $DUR x $ROUNDS rounds;" \
    "syscalls: $SYSCALLS"
describe

# load_cmd LOAD CASE SERVER PATH DUR JSON: sets CMD (the load generator's command) and PARSE.
load_cmd() {
    local load=$1 case=$2 server=$3 path=$4 dur=$5 json=$6
    local url="http://127.0.0.1:${PORT[$server]}"
    [[ $case == tls-* ]] && url="https://127.0.0.1:${PORT[$server-tls]}"
    PARSE=$load
    if [[ $load == wrk ]]; then
        CMD=(wrk -t1 -c "$CONNS" -d "$dur")
        case $case in
        pipe) CMD+=(-s "$BENCH_DIR/pipeline.lua" "$url$path" -- "$DEPTH") ;;
        http10 | tls-close) CMD+=(-H "Connection: close" "$url$path") ;;
        *) CMD+=("$url$path") ;;
        esac
    else
        CMD=("$FLINT" bench "$url" -t 1 -c "$CONNS" -d "$dur" --json "$json" -q --report none)
        case $case in
        pipe) CMD+=(-w "$WORK/pipe.filelist" --pipeline) ;;
        http10) CMD+=("$path" --http 1.0) ;;
        *) CMD+=("$path") ;;
        esac
    fi
}

# measure CASE LOAD SERVER PATH DUR PURPOSE ROUND [LABEL...]: one run, appended to $records.
measure() {
    local case=$1 load=$2 server=$3 path=$4 dur=$5 purpose=$6 round=$7
    shift 7
    local json="$WORK/flint-bench.json" sys=none pid=${PID[$server]}
    [[ $purpose == syscalls ]] && sys=$SYSCALLS
    [[ $case == tls-* ]] && pid=${PID[$server-tls]}
    load_cmd "$load" "$case" "$server" "$path" "$dur" "$json"
    rm -f "$json"
    "${MEASURE[@]}" run --out "$records" --log "$WORK/load.log" --parse "$PARSE" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" \
        --server-pid "$pid" --syscalls "$sys" --timeout $(($(seconds "$dur") + 60)) \
        --label "case=$case" --label "load=$load" --label "server=$server" \
        --label "purpose=$purpose" --label "round=$round" "$@" -- "${CMD[@]}"
}

# warm CASE LOAD SERVER PATH: one unrecorded second, so no server is measured cold.
warm() {
    load_cmd "$2" "$1" "$3" "$4" 1s "$WORK/warm.json"
    taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$WORK/warm.log" 2>&1 ||
        die "warm-up failed: ${CMD[*]}: $(tail -5 "$WORK/warm.log")"
}

# run_case CASE TITLE: every load generator of the case, servers alternated, then syscalls.
run_case() {
    local case=$1 title=$2 loads servers="" s load round
    local path=${3:-/1k.bin}
    case $case in
    ka) loads=$LOAD ;;
    pipe) loads=$PIPE_LOAD ;;
    http10) loads=$HTTP10_LOAD ;;
    tls-*) loads=wrk ;;
    esac
    for s in $SERVERS; do
        # The floor answers every request with its fixed 1 KiB and never closes a connection,
        # and speaks no TLS.
        [[ $s == floor && ($case == http10 || $case == tls-*) ]] && continue
        servers+=" $s"
    done
    for load in $loads; do
        note "case $case ($title), load: $load"
        for s in $servers; do warm "$case" "$load" "$s" "$path"; done
        for ((round = 1; round <= ROUNDS; round++)); do
            for s in $servers; do
                measure "$case" "$load" "$s" "$path" "$DUR" timed "$round" --label "title=$title"
            done
        done
        if [[ $SYSCALLS != none ]]; then
            for s in $servers; do
                measure "$case" "$load" "$s" "$path" "$SYS_DUR" syscalls 0 --label "title=$title"
            done
        fi
    done
}

size_bytes() {
    case $1 in
    500) echo 500 ;;
    *k) echo $((${1%k} * 1024)) ;;
    1m) echo $((1024 * 1024)) ;;
    esac
}

for case in $CASES; do
    case $case in
    ka) run_case ka "1 KiB, keep-alive, $CONNS connections" ;;
    pipe) run_case pipe "1 KiB, pipelined $DEPTH deep, $CONNS connections" ;;
    http10) run_case http10 "1 KiB, HTTP/1.0, a connection per request, $CONNS at a time" ;;
    tls)
        run_case tls-ka "HTTPS, 1 KiB, keep-alive, $CONNS connections"
        run_case tls-close "HTTPS, 1 KiB, a full handshake per request, $CONNS at a time"
        run_case tls-1m "HTTPS, 1 MiB, keep-alive, $CONNS connections" /1m.bin
        ;;
    bw)
        bw_servers=""
        for s in $SERVERS; do [[ $s == floor ]] || bw_servers+=" $s"; done
        note "case bw (bandwidth, $BW_DUR per size and server), load: $LOAD"
        for size in $BW_SIZES; do
            for s in $bw_servers; do warm bw "$LOAD" "$s" "/$size.bin"; done
            for ((round = 1; round <= ROUNDS; round++)); do
                for s in $bw_servers; do
                    measure bw "$LOAD" "$s" "/$size.bin" "$BW_DUR" timed "$round" \
                        --label "size=$size" --label "size_bytes=$(size_bytes "$size")"
                done
            done
            if [[ $SYSCALLS != none && $BW_SYSCALLS == 1 ]]; then
                for s in $bw_servers; do
                    measure bw "$LOAD" "$s" "/$size.bin" "$SYS_DUR" syscalls 0 \
                        --label "size=$size" --label "size_bytes=$(size_bytes "$size")"
                done
            fi
        done
        ;;
    esac
done

echo
"${MEASURE[@]}" summary-server "$records" "${META[@]}" --meta "dur=$DUR" --meta "rounds=$ROUNDS" \
    --meta "conns=$CONNS" --meta "bw_dur=$BW_DUR" --meta "depth=$DEPTH" \
    --meta "syscalls=$SYSCALLS" ${out_json:+--json-out "$out_json"}
