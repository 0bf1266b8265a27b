#!/usr/bin/env bash
# The load generator on an application's workload: what a templated, checked request costs
# flint bench, against its own static figure and against wrk driven by a Lua script.
#
# One `flint serve` (one thread, pinned to SERVER_CPU) serves /item.html, whatever the query
# string. Each client in turn, pinned to CLIENT_CPU, drives it over CONNS keep-alive connections
# for DUR; the order repeats ROUNDS times (A B C A B C ...) so that drift in the machine falls on
# every client alike:
#   flint-app     flint bench -w app.toml: each request's path from a data row's `id` and
#                 `{{random 1 100000}}`, an `X-User` header from the row's `name`, the status
#                 and the body checked (`body_contains`);
#   wrk-lua       wrk -s bench/app.lua: the same requests built in Lua (the CSV read once), the
#                 same checks in response();
#   flint-static  flint bench -w static.toml: one such URL and header, no template, no check
#                 (requests built once, before the run).
# Reported: medians of requests/s and client CPU per request (user+sys of the client process
# from wait4's rusage / responses), the ratios flint-app/wrk-lua and flint-app/flint-static
# (of the medians, and paired within each round), and each client's check failures (must be 0).
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), ROWS (1000: rows of the data file), CLIENTS
# ("flint-app wrk-lua flint-static"), FLINT (path), FLINT_ARGS (more flint bench options),
# RESULTS (1: results/app-DATE.json; or a file name), SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
ROWS=${ROWS:-1000}
CLIENTS=${CLIENTS:-flint-app wrk-lua flint-static}
# The text every response's body must hold (the page holds it; a failed check is an error).
WANT="Welcome back"

secs=$(seconds "$DUR")
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ && $ROWS =~ ^[1-9][0-9]*$ ]] || die "CONNS/ROWS: positive numbers"
for c in $CLIENTS; do
    case $c in
    flint-app | flint-static) ;;
    wrk-lua) need wrk ;;
    *) die "unknown client '$c' in CLIENTS (flint-app, wrk-lua, flint-static)" ;;
    esac
done
need_flint

bench_init
records="$WORK/records.jsonl"
out_json=$(results_path app)

# The page (about 1 KiB), the data file and the two workloads.
mkdir -p "$WORK/docs"
{
    echo "<!doctype html><html><head><title>Account</title></head><body>"
    echo "<h1>$WANT</h1>"
    for ((i = 0; i < 14; i++)); do
        echo "<p>Line $i of the account page, as an application would render it.</p>"
    done
    echo "</body></html>"
} >"$WORK/docs/item.html"
{
    echo "id,name"
    for ((i = 1; i <= ROWS; i++)); do
        echo "$i,user$i"
    done
} >"$WORK/users.csv"
cat >"$WORK/app.toml" <<EOF
[data.users]
file = "users.csv"
pick = "cycle"

[[page]]
name = "item"
weight = 1
files = [{ path = "/item.html?id={{users.id}}&r={{random 1 100000}}",
           headers = { "X-User" = "{{users.name}}" },
           expect = { status = 200, body_contains = "$WANT" } }]
EOF
cat >"$WORK/static.toml" <<EOF
[[page]]
name = "item"
weight = 1
files = [{ path = "/item.html?id=1&r=50000", headers = ["X-User: user1"] }]
EOF

start_flint "$WORK/docs"
url="http://127.0.0.1:$FLINT_PORT"

echo "== application client benchmark: flint serve, /item.html templated and checked," \
    "$CONNS connections, $DUR x $ROUNDS rounds"
describe

# run_client TOOL ROUND: one measured run, appended to $records.
run_client() {
    local tool=$1 round=$2 json="$WORK/$1-$2.json" parse=flint
    local -a cmd
    case $tool in
    flint-app | flint-static)
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$url" -w "$WORK/${tool#flint-}.toml" -t 1
            -c "$CONNS" -d "$DUR" --json "$json" -q --report none)
        ;;
    wrk-lua)
        parse=wrk
        cmd=(wrk -t1 -c "$CONNS" -d "$DUR" -s "$BENCH_DIR/app.lua" "$url" --
            "$WORK/users.csv" "$WANT")
        ;;
    esac
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$tool.log" --parse "$parse" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$FLINT_PID" \
        --timeout $((secs + 60)) --label "kind=app" --label "tool=$tool" \
        --label "round=$round" -- "${cmd[@]}"
    # wrk counts neither a wrong body nor a status its Lua rejected: app.lua's own count.
    if [[ $tool == wrk-lua ]] && ! grep -q "^check failures: 0$" "$WORK/$tool.log"; then
        die "wrk-lua: $(grep "^check failures" "$WORK/$tool.log" || echo "no check count")" \
            "(the Lua script's checks failed or did not run)"
    fi
}

# Warm the server (page cache, CPU clocks) and see that flint's workload passes its checks (the
# Lua script's are seen in its first measured round: it fails the run if any failed).
taskset -c "$CLIENT_CPU" "$FLINT" bench "$url" -w "$WORK/app.toml" -t 1 -c "$CONNS" -d 1s -q \
    --report none --threshold 'errors<1' >"$WORK/warmup.log" 2>&1 ||
    die "warm-up run (flint-app) failed: $(tail -5 "$WORK/warmup.log")"

for ((round = 1; round <= ROUNDS; round++)); do
    note "round $round/$ROUNDS"
    for tool in $CLIENTS; do
        run_client "$tool" "$round"
    done
done

echo
BENCH_DIR="$BENCH_DIR" python3 - "$records" "$out_json" "${META[@]}" --meta "dur=$DUR" \
    --meta "rounds=$ROUNDS" --meta "conns=$CONNS" --meta "rows=$ROWS" <<'PY'
"""The medians and ratios of app.sh's records (measure.py's helpers)."""
import json
import os
import sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import load_records, med, paired, ratio, spread, table  # noqa: E402

records, out_json, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
meta = dict(v.split("=", 1) for k, v in zip(rest[::2], rest[1::2]) if k == "--meta")
recs = [r for r in load_records(records) if r.get("kind") == "app"]
tools = [t for t in ("flint-app", "wrk-lua", "flint-static") if any(r["tool"] == t for r in recs)]
rows = [["client", "runs", "requests/s", "client CPU us/req", "server CPU us/req", "errors"]]
stats = {}
for t in tools:
    rs = [r for r in recs if r["tool"] == t]
    col = {k: [r[k] for r in rs if k in r]
           for k in ("rps", "client_cpu_us_per_req", "server_cpu_us_per_req")}
    stats[t] = {k: med(v) for k, v in col.items()}
    stats[t]["runs"] = len(rs)
    stats[t]["errors"] = sum(r["errors"] for r in rs)
    rows.append([t, str(len(rs)), spread(col["rps"], ".0f"),
                 spread(col["client_cpu_us_per_req"], ".2f"),
                 spread(col["server_cpu_us_per_req"], ".2f"), str(stats[t]["errors"])])
print(table(rows))
print("(medians over rounds; min-max in parentheses)\n")
cpu = "client_cpu_us_per_req"
ratios = {}
for a, b, goal in (("flint-app", "wrk-lua", "<= 0.5"), ("flint-app", "flint-static", "<= 1.3")):
    if a in stats and b in stats:
        ratios[f"{a}/{b} client_cpu_per_req"] = {
            "of_medians": ratio(stats[a][cpu], stats[b][cpu]),
            "paired": paired(recs, a, b, cpu), "goal": goal}
        ratios[f"{a}/{b} requests_per_s"] = {
            "of_medians": ratio(stats[a]["rps"], stats[b]["rps"]),
            "paired": paired(recs, a, b, "rps"), "goal": None}
rows = [["ratio", "of medians", "paired", "goal"]]
for k, v in ratios.items():
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    rows.append([k, fmt(v["of_medians"]), fmt(v["paired"]), v["goal"] or ""])
if len(rows) > 1:
    print(table(rows))
if any(s["errors"] for s in stats.values()):
    print("\nERRORS: a client counted errors (failed checks, or the server's): figures suspect")
if out_json:
    with open(out_json, "w", encoding="utf-8") as fo:
        json.dump({"meta": meta, "medians": stats, "ratios": ratios, "runs": recs}, fo, indent=2)
    print(f"\nresults written to {out_json}")
PY
