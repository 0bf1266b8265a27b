#!/usr/bin/env bash
# HTTP/3 on loopback: flint serve over HTTP/3 against itself over HTTP/2 with TLS and against
# Caddy over HTTP/3; flint bench --http 3 against oha as a client; 1 MiB files; memory per idle
# connection.
#
# Servers, each one process pinned to SERVER_CPU: one `flint serve --threads 1` with TLS (HTTP/3
# on the same port number over UDP: the flint-h3 and flint-h2-tls rows are the same process),
# and Debian's Caddy (GOMAXPROCS=1, no access log, HTTP/3 on by default). Certificates: ECDSA
# P-256 made here; the clients do not verify them (-k, --insecure).
#
# 1. Servers: flint bench (one thread, pinned to CLIENT_CPU) runs CONNS connections, each
#    fetching pages of STREAMS copies of the 1 KiB file (the page's files go as concurrent
#    streams, over HTTP/3 and over HTTP/2 alike), for DUR; rows alternate within each round
#    (A B C A B C ...), ROUNDS rounds. Server CPU per request = user+sys of the server process
#    over the run / requests; medians, and the ratios paired within each round.
# 2. Clients: flint bench --http 3 against oha (--http-version 3, -c CONNS -p STREAMS, one
#    worker thread), both pinned to CLIENT_CPU, against the same flint serve: client CPU per
#    request from wait4's rusage. h2load joins if it has --h3 (Debian bookworm's 1.52 has not).
# 3. 1 MiB files over BIG_CONNS connections, one stream each: MiB/s and CPU per MiB, HTTP/3
#    against HTTP/2 with TLS.
# 4. Memory per idle connection: a fresh flint serve's resident memory with MEM_CONNS
#    connections that each fetched one file and then wait (flint bench --think), minus before
#    (after one warm-up connection), over MEM_CONNS; HTTP/3, then HTTP/2 with TLS.
# PROFILE=1 then records flint serve under HTTP/3 load with `perf record -g` for 5 s and prints
# its top symbols.
#
# Environment: DUR (5s), ROUNDS (5), CONNS (40), STREAMS (10), BIG_CONNS (4), MEM_CONNS (500),
# PROFILE (0), CADDY (/usr/bin/caddy), OHA (oha), CLIENTS ("flint oha"), FLINT, FLINT_ARGS, RESULTS, SERVER_CPU,
# CLIENT_CPU. oha with HTTP/3 comes from scripts/install-oha.sh, Caddy from
# scripts/install-peers.sh.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-5s}
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-40}
STREAMS=${STREAMS:-10}
BIG_CONNS=${BIG_CONNS:-4}
MEM_CONNS=${MEM_CONNS:-500}
PROFILE=${PROFILE:-0}
CADDY=${CADDY:-/usr/bin/caddy}
OHA=${OHA:-oha}
CLIENTS=${CLIENTS:-flint oha}

secs=$(seconds "$DUR")
for n in "$ROUNDS" "$CONNS" "$STREAMS" "$BIG_CONNS" "$MEM_CONNS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "ROUNDS, CONNS, STREAMS, BIG_CONNS, MEM_CONNS: positive numbers"
done
need_flint
[[ -x $CADDY ]] || die "no Caddy at $CADDY: run scripts/install-peers.sh (as root)"
for c in $CLIENTS; do [[ $c == flint || $c == oha ]] || die "CLIENTS: flint, oha"; done
if [[ " $CLIENTS " == *" oha "* ]]; then
    command -v "$OHA" >/dev/null 2>&1 || die "'$OHA' not found: run scripts/install-oha.sh (as root)"
    if timeout 10 "$OHA" --no-tui -n 1 --http-version 3 https://127.0.0.1:9/ 2>&1 |
        grep -q 'not been built with HTTP/3'; then
        die "$OHA was built without HTTP/3: run scripts/install-oha.sh (as root)"
    fi
fi
h2load_h3=""
if command -v h2load >/dev/null 2>&1 && h2load --help 2>&1 | grep -q -- '--h3'; then
    h2load_h3=yes
fi

bench_init
records="$WORK/records.jsonl"
out_json=$(results_path h3)
make_docroot "$WORK/docs"
make_cert "$WORK/tls"
chmod -R a+rX "$WORK"
page_of() { # page_of FILE COUNT: a workload of one page of COUNT copies of FILE
    local files="" i
    for ((i = 0; i < $2; i++)); do files+="${files:+, }\"$1\""; done
    printf '[[page]]\nname = "p"\nweight = 1\nfiles = [%s]\n' "$files"
}
page_of /1k.bin "$STREAMS" >"$WORK/page-1k.toml"
page_of /1m.bin 1 >"$WORK/page-1m.toml"
page_of /1k.bin 1 >"$WORK/page-1k-one.toml"

# start_caddy: Caddy on a port free for TCP and UDP, its state under $WORK; sets CADDY_PID
# and CADDY_PORT.
start_caddy() {
    local dir="$WORK/caddy"
    mkdir -p "$dir"
    CADDY_PORT=$(python3 -c '
import socket
for _ in range(50):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass
else:
    raise SystemExit("no port free for both TCP and UDP")')
    cat >"$dir/Caddyfile" <<EOF
{
  admin off
  auto_https off
  servers {
    protocols h1 h2 h3
  }
}
https://:$CADDY_PORT {
  bind 127.0.0.1
  tls $WORK/tls/cert.pem $WORK/tls/key.pem
  root * $WORK/docs
  file_server
}
EOF
    HOME=$dir XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config GOMAXPROCS=1 \
        start_pinned caddy "$CADDY_PORT" "$CADDY" run --adapter caddyfile --config "$dir/Caddyfile"
    CADDY_PID=$LAST_PID
}

# bench_cmd HTTP PORT WORKLOAD CONNS JSON [STOP...]: flint bench's command line, into CMD.
bench_cmd() {
    local http=$1 port=$2 wl=$3 conns=$4 json=$5
    shift 5
    [[ $# -gt 0 ]] || set -- -d "$DUR"
    CMD=("$FLINT" bench "${FLINT_EXTRA[@]}" "https://127.0.0.1:$port" -w "$wl" --http "$http" -k
        -t 1 -c "$conns" "$@" --json "$json" -q --report none)
}

# measure KIND ROW ROUND SERVER_PID PARSE JSON CMD...: one measured run, appended to $records
# (SIZE: the file's bytes, for MiB/s).
measure() {
    local kind=$1 row=$2 round=$3 pid=$4 parse=$5 json=$6
    local -a size=()
    shift 6
    [[ -z ${SIZE:-} ]] || size=(--label "size_bytes=$SIZE")
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$row.log" --parse "$parse" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$pid" \
        --timeout $((secs + 60)) --label "kind=$kind" --label "row=$row" --label "round=$round" \
        --label "title=${TITLE:--c $CONNS, pages of $STREAMS x 1 KiB, $DUR}" \
        "${size[@]}" -- "$@"
}

# warm HTTP PORT NAME: a few pages until every file is answered (bounded: 20 tries), so a
# server still binding its UDP socket is waited for, and caches are warm.
warm() {
    local i json="$WORK/warm.json"
    for ((i = 0; i < 20; i++)); do
        bench_cmd "$1" "$2" "$WORK/page-1k.toml" 4 "$json" -n 200
        if taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$WORK/warm.log" 2>&1 &&
            python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
sys.exit(0 if s["requests"] == 200 * int(sys.argv[2]) and not s.get("errors") else 1)' \
                "$json" "$STREAMS"; then
            return 0
        fi
        sleep 0.5
    done
    die "$3 over HTTP/$1 did not answer every warm-up request: $(tail -5 "$WORK/warm.log")"
}

start_flint "$WORK/docs" "$WORK/tls"
start_caddy
echo "== HTTP/3 benchmark: flint serve (h3, h2+TLS) and Caddy (h3), flint bench and oha"
echo "   1 KiB: -c $CONNS, pages of $STREAMS files; 1 MiB: -c $BIG_CONNS; $DUR x $ROUNDS rounds"
describe
echo "caddy:   $("$CADDY" version | head -1)   oha: $("$OHA" --version 2>/dev/null | head -1 || echo none)"
echo "h2load:  $(h2load --version 2>&1 | head -1)$([[ -n $h2load_h3 ]] || echo ': no --h3 (built without HTTP/3)')"
warm 3 "$FLINT_PORT" flint
warm 2 "$FLINT_PORT" flint
warm 3 "$CADDY_PORT" caddy

oha_cmd() { # into CMD: oha against flint serve over HTTP/3, its JSON into $1
    CMD=("$OHA" --no-tui --output-format json -o "$1" --http-version 3 --insecure -c "$CONNS"
        -p "$STREAMS" -z "$DUR" --worker-threads 1 "https://127.0.0.1:$FLINT_PORT/1k.bin")
}

for ((round = 1; round <= ROUNDS; round++)); do
    note "round $round/$ROUNDS"
    json="$WORK/run.json"
    bench_cmd 3 "$FLINT_PORT" "$WORK/page-1k.toml" "$CONNS" "$json"
    measure server flint-h3 "$round" "$FLINT_PID" flint "$json" "${CMD[@]}"
    bench_cmd 2 "$FLINT_PORT" "$WORK/page-1k.toml" "$CONNS" "$json"
    measure server flint-h2-tls "$round" "$FLINT_PID" flint "$json" "${CMD[@]}"
    bench_cmd 3 "$CADDY_PORT" "$WORK/page-1k.toml" "$CONNS" "$json"
    measure server caddy-h3 "$round" "$CADDY_PID" flint "$json" "${CMD[@]}"

    for c in $CLIENTS; do
        if [[ $c == oha ]]; then
            oha_cmd "$WORK/oha.json"
            measure client oha "$round" "$FLINT_PID" oha "$WORK/oha.json" "${CMD[@]}"
        else
            bench_cmd 3 "$FLINT_PORT" "$WORK/page-1k.toml" "$CONNS" "$json"
            measure client flint-bench "$round" "$FLINT_PID" flint "$json" "${CMD[@]}"
        fi
    done
    if [[ -n $h2load_h3 ]]; then
        measure client h2load-h3 "$round" "$FLINT_PID" h2load "" h2load --h3 -t 1 -c "$CONNS" \
            -m "$STREAMS" -D "$secs" "https://127.0.0.1:$FLINT_PORT/1k.bin"
    fi

    for http in 3 2; do
        bench_cmd "$http" "$FLINT_PORT" "$WORK/page-1m.toml" "$BIG_CONNS" "$json"
        row=flint-h3
        [[ $http == 2 ]] && row=flint-h2-tls
        TITLE="-c $BIG_CONNS, one 1 MiB file a page, $DUR" SIZE=$((1 << 20)) measure bw "$row" "$round" "$FLINT_PID" flint "$json" "${CMD[@]}"
    done
done

python3 "$BENCH_DIR/h3_summary.py" "$records" ${out_json:+"$out_json"}

if [[ $PROFILE == 1 ]]; then
    need perf
    echo
    echo "== where flint serve's time goes under HTTP/3 (perf record -g, 5 s, top symbols)"
    bench_cmd 3 "$FLINT_PORT" "$WORK/page-1k.toml" "$CONNS" "$WORK/perf-load.json" -d 8s
    taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$WORK/perf-load.log" 2>&1 &
    load_pid=$!
    STARTED+=("$load_pid")
    sleep 1
    perf record -q -g -p "$FLINT_PID" -o "$WORK/perf.data" -- sleep 5 >"$WORK/perf.log" 2>&1 ||
        die "perf record failed: $(tail -3 "$WORK/perf.log")"
    wait "$load_pid" || true
    perf report -i "$WORK/perf.data" --no-children --sort dso,symbol --percent-limit 1 --stdio \
        -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | cut -c1-150 | sed 's/[ -]*$//' | head -40
fi

# rss_of PID: resident bytes.
rss_of() {
    awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"
}

# idle_memory HTTP: a fresh flint serve, one warm-up connection, then MEM_CONNS connections
# that each fetch one file and think for longer than the measurement: serve's RSS once it has
# stopped growing (two readings 0.5 s apart equal, at most 30 s), minus before.
idle_memory() {
    local http=$1 before after prev="" i load_pid
    start_flint "$WORK/docs" "$WORK/tls"
    bench_cmd "$http" "$FLINT_PORT" "$WORK/page-1k-one.toml" 1 "$WORK/mem.json" -n 1
    taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$WORK/mem-warm.log" 2>&1 ||
        die "warm-up for the memory run failed: $(tail -3 "$WORK/mem-warm.log")"
    before=$(rss_of "$FLINT_PID")
    bench_cmd "$http" "$FLINT_PORT" "$WORK/page-1k-one.toml" "$MEM_CONNS" "$WORK/mem.json" \
        -d 60s --think 120s
    taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$WORK/mem-load.log" 2>&1 &
    load_pid=$!
    STARTED+=("$load_pid")
    sleep 2
    for ((i = 0; i < 60; i++)); do
        after=$(rss_of "$FLINT_PID")
        [[ $after == "$prev" ]] && break
        prev=$after
        sleep 0.5
    done
    printf '%-14s %8.1f KiB per idle connection (%d -> %d KiB, %d connections)\n' \
        "HTTP/$http$([[ $http == 2 ]] && echo '+TLS')" \
        "$(awk "BEGIN { print ($after - $before) / $MEM_CONNS / 1024 }")" $((before / 1024)) \
        $((after / 1024)) "$MEM_CONNS"
    stop_pid "$load_pid"
    stop_pid "$FLINT_PID"
}

echo
echo "== flint serve's memory per idle connection ($MEM_CONNS connections, one 1 KiB file each)"
idle_memory 3
idle_memory 2
