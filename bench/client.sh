#!/usr/bin/env bash
# The load generator's speed: flint bench against wrk (and the cfloor floor client), same nginx.
#
# One nginx (one process, pinned to SERVER_CPU) serves a 1 KiB file; each client in turn, pinned
# to CLIENT_CPU, drives it over CONNS keep-alive connections for DUR; the order repeats ROUNDS
# times (A B C A B C ...) so that drift in the machine falls on every client alike. Reported:
# medians of requests/s and client CPU per request (user+sys of the client process from wait4's
# rusage / requests it completed), the ratios, and flint's memory per connection.
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), MEM_CONNS (1000), CLIENTS ("flint wrk cfloor"),
# FLINT (path), FLINT_ARGS (more flint options), RESULTS (1: results/client-DATE.json; or a file
# name), SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
MEM_CONNS=${MEM_CONNS:-1000}
CLIENTS=${CLIENTS:-flint wrk cfloor}

secs=$(seconds "$DUR")
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ && $MEM_CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS/MEM_CONNS: numbers"
((MEM_CONNS > CONNS)) || die "MEM_CONNS must be larger than CONNS"
for c in $CLIENTS; do
    case $c in
    flint) need_flint ;;
    wrk) need wrk ;;
    cfloor) ;;
    *) die "unknown client '$c' in CLIENTS (flint, wrk, cfloor)" ;;
    esac
done

bench_init
need "$NGINX" wrk
records="$WORK/records.jsonl"
out_json=$(results_path client)
make_docroot "$WORK/docs"
[[ " $CLIENTS " == *" cfloor "* ]] && build_floor
start_nginx "$WORK/docs"
url="http://127.0.0.1:$NGINX_PORT"

echo "== client benchmark: nginx, 1 KiB, keep-alive, $CONNS connections, $DUR x $ROUNDS rounds"
describe

# run_client TOOL ROUND CONNECTIONS KIND: one measured run, appended to $records.
run_client() {
    local tool=$1 round=$2 conns=$3 kind=$4 json="$WORK/flint-$1-$2-$3.json"
    local cmd parse=$tool
    case $tool in
    flint)
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$url" /1k.bin -t 1 -c "$conns" -d "$DUR"
            --json "$json" -q --report none)
        ;;
    wrk) cmd=(wrk -t1 -c "$conns" -d "$DUR" "$url/1k.bin") ;;
    cfloor) cmd=("$CFLOOR_BIN" "$NGINX_PORT" "$conns" "$secs" "$resp_len") ;;
    esac
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$tool.log" --parse "$parse" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$NGINX_PID" \
        --timeout $((secs + 60)) --label "kind=$kind" --label "tool=$tool" \
        --label "round=$round" --label "connections=$conns" -- "${cmd[@]}"
}

resp_len=$("${MEASURE[@]}" resplen --port "$NGINX_PORT" --path /1k.bin)
# Warm nginx (open file cache, page cache, CPU clocks) before anything is measured.
taskset -c "$CLIENT_CPU" wrk -t1 -c "$CONNS" -d 1s "$url/1k.bin" >"$WORK/warmup.log" 2>&1 ||
    die "warm-up run (wrk) failed: $(cat "$WORK/warmup.log")"

for ((round = 1; round <= ROUNDS; round++)); do
    note "round $round/$ROUNDS"
    for tool in $CLIENTS; do
        run_client "$tool" "$round" "$CONNS" client
    done
done
if [[ " $CLIENTS " == *" flint "* ]]; then
    note "memory: flint with $MEM_CONNS connections"
    run_client flint 1 "$MEM_CONNS" memory
fi

echo
"${MEASURE[@]}" summary-client "$records" --connections "$CONNS" "${META[@]}" \
    --meta "dur=$DUR" --meta "rounds=$ROUNDS" --meta "conns=$CONNS" ${out_json:+--json-out "$out_json"}
