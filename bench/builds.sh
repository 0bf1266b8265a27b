#!/usr/bin/env bash
# Two builds of flint, A B A B: what a change costs the server and the load generator.
#
# FLINT_A is the base (e.g. a release build of the commit before a change), FLINT_B the build
# under test (default: FLINT). For each case the two take turns (A B A B ...) for ROUNDS
# rounds, pinned as every script here pins (server on SERVER_CPU, load on CLIENT_CPU), and the
# figure that does not depend on the other side is compared: the CPU per request of the build's
# own process (the server's from /proc/PID/stat over the run, the client's from wait4's
# rusage), as the median over rounds and paired within each round (B/A).
#
# Cases (CASES, default all), 1 KiB file, CONNS connections:
#   serve-ka    flint serve (A or B, one thread), wrk keep-alive
#   serve-pipe  the same, wrk writing DEPTH requests at once (bench/pipeline.lua)
#   serve-tls   HTTPS (ECDSA P-256, made here), wrk keep-alive
#   serve-h2c   HTTP/2 by prior knowledge, h2load -m STREAMS
#   serve-h2    HTTP/2 over TLS (ALPN), h2load -m STREAMS
#   serve-h3    HTTP/3 on the TLS server's port, B's flint bench --http 3 --streams STREAMS
#   bench-h1    flint bench (A or B) keep-alive against one flint serve (B's)
#   bench-h2    flint bench --http 2 --streams STREAMS against the same server, by prior knowledge
#
# Environment: FLINT_A (required), FLINT_B (default FLINT), CASES, DUR (5s), ROUNDS (4), CONNS
# (40), DEPTH (16), STREAMS (10), RESULTS (1: results/builds-DATE.json; or a file name),
# SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ALL_CASES="serve-ka serve-pipe serve-tls serve-h2c serve-h2 serve-h3 bench-h1 bench-h2"
CASES=${CASES:-$ALL_CASES}
DUR=${DUR:-5s}
ROUNDS=${ROUNDS:-4}
CONNS=${CONNS:-40}
DEPTH=${DEPTH:-16}
STREAMS=${STREAMS:-10}
FLINT_B=${FLINT_B:-$FLINT}
[[ -n ${FLINT_A:-} ]] || die "FLINT_A: the base build's flint binary (FLINT_B, default FLINT, is compared with it)"

secs=$(seconds "$DUR")
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
for n in "$CONNS" "$DEPTH" "$STREAMS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "CONNS, DEPTH, STREAMS: positive numbers"
done
for c in $CASES; do
    [[ " $ALL_CASES " == *" $c "* ]] || die "unknown case '$c' in CASES ($ALL_CASES)"
done
for b in "$FLINT_A" "$FLINT_B"; do
    [[ -x $b ]] || die "no flint binary at $b"
done
need wrk h2load openssl

bench_init
records="$WORK/records.jsonl"
out_json=$(results_path builds)
make_docroot "$WORK/docs"
make_cert "$WORK/tls"

# Every server the cases need, started once (an idle one costs nothing): PID[build-transport].
declare -A PID PORT BIN=([A]=$FLINT_A [B]=$FLINT_B)
for b in A B; do
    for t in plain tls; do
        FLINT=${BIN[$b]}
        start_flint "$WORK/docs" "$([[ $t == tls ]] && echo "$WORK/tls")"
        PID[$b-$t]=$FLINT_PID PORT[$b-$t]=$FLINT_PORT
    done
done
FLINT=$FLINT_B

echo "== two builds of flint, A B A B: $CASES; 1 KiB, $CONNS connections, $DUR x $ROUNDS rounds"
describe
echo "A:       $("$FLINT_A" --version 2>/dev/null) ($FLINT_A)"
echo "B:       $("$FLINT_B" --version 2>/dev/null) ($FLINT_B)"
META+=(--meta "flint_a=$FLINT_A" --meta "flint_b=$FLINT_B")

# measure CASE BUILD ROUND: one run of CASE with BUILD as the server or the client.
measure() {
    local c=$1 b=$2 round=$3 parse json="$WORK/flint-$1-$2-$3.json" server
    local -a cmd
    local url="http://127.0.0.1:${PORT[$b-plain]}/1k.bin"
    case $c in
    serve-ka) parse=wrk cmd=(wrk -t1 -c "$CONNS" -d "$DUR" "$url") ;;
    serve-pipe)
        parse=wrk
        cmd=(wrk -t1 -c "$CONNS" -d "$DUR" -s "$BENCH_DIR/pipeline.lua" "$url" -- "$DEPTH")
        ;;
    serve-tls)
        parse=wrk
        cmd=(wrk -t1 -c "$CONNS" -d "$DUR" "https://127.0.0.1:${PORT[$b-tls]}/1k.bin")
        ;;
    serve-h2c) parse=h2load cmd=(h2load -t 1 -c "$CONNS" -m "$STREAMS" -D "$secs" "$url") ;;
    serve-h2)
        parse=h2load
        cmd=(h2load -t 1 -c "$CONNS" -m "$STREAMS" -D "$secs"
            "https://127.0.0.1:${PORT[$b-tls]}/1k.bin")
        ;;
    serve-h3)
        parse=flint
        cmd=("$FLINT_B" bench "https://127.0.0.1:${PORT[$b-tls]}" /1k.bin --http 3 -k
            --streams "$STREAMS" -t 1 -c "$CONNS" -d "$DUR" --json "$json" -q --report none)
        ;;
    bench-h1 | bench-h2)
        parse=flint url="http://127.0.0.1:${PORT[B-plain]}"
        cmd=("${BIN[$b]}" bench "$url" /1k.bin -t 1 -c "$CONNS" -d "$DUR" --json "$json" -q
            --report none)
        [[ $c == bench-h2 ]] && cmd+=(--http 2 --streams "$STREAMS")
        ;;
    esac
    server=${PID[$b-plain]}
    [[ $c == serve-tls || $c == serve-h2 || $c == serve-h3 ]] && server=${PID[$b-tls]}
    [[ $c == bench-* ]] && server=${PID[B-plain]}
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$c-$b.log" --parse "$parse" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$server" \
        --timeout $((secs + 60)) --label "case=$c" --label "tool=$b" --label "round=$round" \
        -- "${cmd[@]}"
}

# Warm every server (page cache, CPU clocks) before anything is measured.
for k in "${!PORT[@]}"; do
    scheme=http
    [[ $k == *-tls ]] && scheme=https
    taskset -c "$CLIENT_CPU" wrk -t1 -c "$CONNS" -d 1s "$scheme://127.0.0.1:${PORT[$k]}/1k.bin" \
        >"$WORK/warmup.log" 2>&1 || die "warm-up run against $k failed: $(cat "$WORK/warmup.log")"
done

for c in $CASES; do
    for ((round = 1; round <= ROUNDS; round++)); do
        note "$c: round $round/$ROUNDS"
        measure "$c" A "$round"
        measure "$c" B "$round"
    done
done

echo
BENCH_DIR="$BENCH_DIR" python3 - "$records" "$out_json" "${META[@]}" --meta "dur=$DUR" \
    --meta "rounds=$ROUNDS" --meta "conns=$CONNS" --meta "depth=$DEPTH" \
    --meta "streams=$STREAMS" <<'PY'
"""Per case: each build's medians, and B/A of the CPU per request of the build's own process."""
import json
import os
import sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import load_records, med, paired, ratio, spread, table  # noqa: E402

records, out_json, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
meta = dict(v.split("=", 1) for k, v in zip(rest[::2], rest[1::2]) if k == "--meta")
recs = load_records(records)
rows = [["case", "build", "requests/s", "its CPU us/req", "B/A of medians", "B/A paired"]]
out = {}
for case in dict.fromkeys(r["case"] for r in recs):
    rs = [r for r in recs if r["case"] == case]
    # The build's own process: the server in serve-*, the client in bench-*.
    key = "client_cpu_us_per_req" if case.startswith("bench-") else "server_cpu_us_per_req"
    st = {}
    for b in ("A", "B"):
        col = [r for r in rs if r["tool"] == b]
        st[b] = {"rps": med([r["rps"] for r in col]), "cpu_us_per_req": med([r[key] for r in col]),
                 "errors": sum(r["errors"] for r in col)}
        rows.append([case, b, spread([r["rps"] for r in col], ".0f"),
                     spread([r[key] for r in col], ".3f"), "", ""])
    of_medians = ratio(st["B"]["cpu_us_per_req"], st["A"]["cpu_us_per_req"])
    pair = paired(rs, "B", "A", key)
    rows[-1][4] = "-" if of_medians is None else f"{of_medians:.3f}"
    rows[-1][5] = "-" if pair is None else f"{pair:.3f}"
    out[case] = {"figure": key, "A": st["A"], "B": st["B"], "b_over_a": of_medians,
                 "b_over_a_paired": pair}
print(table(rows))
print("(medians over rounds, min-max in parentheses; B/A < 1: B spends less a request)")
if any(v[b]["errors"] for v in out.values() for b in ("A", "B")):
    print("\nERRORS: a run counted errors: its figures are suspect")
if out_json:
    with open(out_json, "w", encoding="utf-8") as fo:
        json.dump({"meta": meta, "cases": out, "runs": recs}, fo, indent=2)
    print(f"\nresults written to {out_json}")
PY
