#!/usr/bin/env bash
# flint serve over HTTP/2 against nginx and h2o, h2load as the client.
#
# Each server (one process or thread, pinned to SERVER_CPU) serves the 1 KiB file; h2load (one
# thread, pinned to CLIENT_CPU) runs CONNS connections for DUR, in four cases: cleartext h2
# (prior knowledge) and TLS (ALPN h2, ECDSA P-256), each with STREAMS_LOW and STREAMS_HIGH
# concurrent streams per connection (-m). Servers alternate within each round (A B C A B C ...),
# ROUNDS rounds. Reported per case: medians of requests/s and server CPU per request (user+sys
# of the server process over the run / requests), the ratios to nginx, and (SYSCALLS=perf or
# strace) syscalls per request in a separate run. flint serve's HTTP/1.1 pipelined syscalls per
# request are measured beside them (h2load --h1 -m STREAMS_LOW). Then each server's memory per
# idle HTTP/2 connection: resident memory with MEM_CONNS connections that each made one request
# and stay open, minus before, divided by MEM_CONNS.
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), STREAMS_LOW (10), STREAMS_HIGH (100),
# MEM_CONNS (1000), SERVERS ("flint nginx h2o"), SYSCALLS (none), SYS_DUR (3s), FLINT, RESULTS,
# SERVER_CPU, CLIENT_CPU. nginx is Debian's (1.22: `listen ... http2`), h2o Debian's h2o.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
STREAMS_LOW=${STREAMS_LOW:-10}
STREAMS_HIGH=${STREAMS_HIGH:-100}
MEM_CONNS=${MEM_CONNS:-1000}
SERVERS=${SERVERS:-flint nginx h2o}
SYSCALLS=${SYSCALLS:-none}
SYS_DUR=${SYS_DUR:-3s}
H2O=${H2O:-/usr/bin/h2o}

secs=$(seconds "$DUR")
seconds "$SYS_DUR" >/dev/null
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
for n in "$CONNS" "$STREAMS_LOW" "$STREAMS_HIGH" "$MEM_CONNS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "CONNS, STREAMS_LOW, STREAMS_HIGH, MEM_CONNS: positive numbers"
done
for s in $SERVERS; do
    case $s in
    flint) need_flint ;;
    nginx) need "$NGINX" ;;
    h2o) need "$H2O" ;;
    *) die "unknown server '$s' in SERVERS (flint, nginx, h2o)" ;;
    esac
done
need h2load

bench_init
records="$WORK/records.jsonl"
out_json=$(results_path h2-server)
make_docroot "$WORK/docs"
make_cert "$WORK/tls"

# start_h2o DOCROOT [TLSDIR]: h2o with one thread; sets H2O_PID and H2O_PORT.
start_h2o() {
    local root=$1 tls=${2:-} conf
    H2O_PORT=$(free_port)
    conf="$WORK/h2o${tls:+-tls}.conf"
    {
        echo "num-threads: 1"
        # Started as root, h2o would switch to nobody, who cannot write into the work dir.
        echo "user: $(id -un)"
        echo "pid-file: $WORK/h2o${tls:+-tls}.pid"
        echo "error-log: $WORK/h2o${tls:+-tls}.error.log"
        echo "listen:"
        echo "  host: 127.0.0.1"
        echo "  port: $H2O_PORT"
        if [[ -n $tls ]]; then
            echo "  ssl:"
            echo "    certificate-file: $tls/cert.pem"
            echo "    key-file: $tls/key.pem"
        fi
        echo "hosts:"
        echo "  default:"
        echo "    paths:"
        echo "      /:"
        echo "        file.dir: $root"
    } >"$conf"
    start_pinned "h2o${tls:+-tls}" "$H2O_PORT" "$H2O" -m worker -c "$conf"
    H2O_PID=$LAST_PID
}

# start_nginx_h2 DOCROOT [TLSDIR]: nginx.conf.in with HTTP/2 on the listener (1.22's syntax:
# `listen ... http2`, cleartext h2 by prior knowledge); sets NGINX_PID and NGINX_PORT.
start_nginx_h2() {
    local root=$1 tls=${2:-} dir listen
    dir="$WORK/nginx-h2${tls:+-tls}"
    NGINX_PORT=$(free_port)
    listen="listen 127.0.0.1:$NGINX_PORT http2;"
    if [[ -n $tls ]]; then
        listen="listen 127.0.0.1:$NGINX_PORT ssl http2; ssl_certificate $tls/cert.pem;"
        listen+=" ssl_certificate_key $tls/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
        listen+=" ssl_session_cache shared:SSL:16m; ssl_session_tickets on;"
    fi
    mkdir -p "$dir"
    sed -e "s|@DIR@|$dir|g" -e "s|@ROOT@|$root|g" -e "s|listen 127.0.0.1:@PORT@;|$listen|" \
        -e "s|keepalive_requests 1000000;|keepalive_requests 1000000; http2_max_requests 1000000;|" \
        "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
    start_pinned "${dir##*/}" "$NGINX_PORT" "$NGINX" -p "$dir" -e "$dir/error.log" \
        -c "$dir/nginx.conf"
    NGINX_PID=$LAST_PID
}

declare -A PID PORT
for s in $SERVERS; do
    for t in h2c tls; do
        tlsdir=""
        [[ $t == tls ]] && tlsdir="$WORK/tls"
        case $s in
        flint) start_flint "$WORK/docs" $tlsdir && PID[$s-$t]=$FLINT_PID PORT[$s-$t]=$FLINT_PORT ;;
        nginx) start_nginx_h2 "$WORK/docs" $tlsdir && PID[$s-$t]=$NGINX_PID PORT[$s-$t]=$NGINX_PORT ;;
        h2o) start_h2o "$WORK/docs" $tlsdir && PID[$s-$t]=$H2O_PID PORT[$s-$t]=$H2O_PORT ;;
        esac
    done
done

url() {
    local scheme=http
    [[ $2 == tls ]] && scheme=https
    echo "$scheme://127.0.0.1:${PORT[$1-$2]}/1k.bin"
}

echo "== HTTP/2 server benchmark: 1 KiB, h2load -c $CONNS, $DUR x $ROUNDS rounds"
echo "   servers: $SERVERS; cases: h2c and TLS, -m $STREAMS_LOW and -m $STREAMS_HIGH"
describe

# measure SERVER TRANSPORT STREAMS DUR PURPOSE ROUND [h1]: one h2load run, appended.
measure() {
    local s=$1 t=$2 m=$3 dur=$4 purpose=$5 round=$6 proto=${7:-h2} sys=none
    [[ $purpose == syscalls ]] && sys=$SYSCALLS
    local -a cmd=(h2load -t 1 -c "$CONNS" -m "$m" -D "$(seconds "$dur")")
    [[ $proto == h1 ]] && cmd+=(--h1)
    cmd+=("$(url "$s" "$t")")
    "${MEASURE[@]}" run --out "$records" --log "$WORK/h2load.log" --parse h2load \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "${PID[$s-$t]}" \
        --syscalls "$sys" --timeout $(($(seconds "$dur") + 60)) \
        --label "case=$proto-$t-m$m" --label "load=h2load" --label "server=$s" \
        --label "purpose=$purpose" --label "round=$round" \
        --label "title=$proto over $t, -c $CONNS -m $m" -- "${cmd[@]}"
}

# Warm every server (caches, clocks).
for s in $SERVERS; do
    for t in h2c tls; do
        taskset -c "$CLIENT_CPU" h2load -t 1 -c 4 -m 10 -n 2000 "$(url "$s" "$t")" \
            >"$WORK/warmup.log" 2>&1 || die "warm-up of $s over $t failed: $(tail -5 "$WORK/warmup.log")"
        grep -q "2000 succeeded" "$WORK/warmup.log" ||
            die "$s over $t: not every warm-up request succeeded: $(grep -E 'requests:|status' "$WORK/warmup.log")"
    done
done

for ((round = 1; round <= ROUNDS; round++)); do
    note "round $round/$ROUNDS"
    for t in h2c tls; do
        for m in "$STREAMS_LOW" "$STREAMS_HIGH"; do
            for s in $SERVERS; do
                measure "$s" "$t" "$m" "$DUR" timed "$round"
            done
        done
    done
done
if [[ $SYSCALLS != none ]]; then
    for t in h2c tls; do
        for s in $SERVERS; do
            measure "$s" "$t" "$STREAMS_LOW" "$SYS_DUR" syscalls 0
        done
        if [[ " $SERVERS " == *" flint "* ]]; then
            measure flint "$t" "$STREAMS_LOW" "$SYS_DUR" syscalls 0 h1
        fi
    done
fi

"${MEASURE[@]}" summary-server "$records" "${META[@]}" --meta "dur=$DUR" --meta "rounds=$ROUNDS" \
    --meta "conns=$CONNS" --meta "syscalls=$SYSCALLS" ${out_json:+--json-out "$out_json"}

# Memory per idle HTTP/2 connection: MEM_CONNS connections, each one request, then held open.
echo
echo "== memory per idle HTTP/2 connection ($MEM_CONNS connections over h2c, one request each)"
for s in $SERVERS; do
    python3 - "${PORT[$s-h2c]}" "${PID[$s-h2c]}" "$MEM_CONNS" "$s" <<'EOF'
import socket, sys, time
port, pid, n, name = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
def frame(t, f, s, p):
    return len(p).to_bytes(3, "big") + bytes([t, f]) + s.to_bytes(4, "big") + p
path, host = b"/1k.bin", b"localhost"
block = bytes([0x82, 0x86, 0x04, len(path)]) + path + bytes([0x01, len(host)]) + host
hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 5, 1, block)
before = rss(pid)
conns = []
for _ in range(n):
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(hello)
    conns.append(c)
deadline = time.time() + 60
for c in conns:
    got = b""
    # The response's DATA frame with END_STREAM on stream 1 (the 1 KiB body).
    while b"\x00\x04\x00\x00\x01\x00\x00\x00\x01" not in got and time.time() < deadline:
        got += c.recv(65536)
    c.sendall(frame(4, 1, 0, b""))  # ack the server's SETTINGS
time.sleep(1)
after = rss(pid)
print(f"{name:6} {(after - before) / n / 1024:8.1f} KiB per idle connection "
      f"({before >> 20} -> {after >> 20} MiB)")
for c in conns:
    c.close()
EOF
done
