#!/usr/bin/env bash
# Reverse proxy: flint serve against nginx, h2o and HAProxy, one 1 KiB response from a fast
# upstream.
#
# The upstream is flint serve itself (--threads 1, serving a 1 KiB file), pinned to APP_CPU, one
# instance per proxy (so the proxies' kept connections do not share one upstream's loop). The
# proxies, each one process or thread pinned to SERVER_CPU, pass /up/1k.bin to it, keep-alive
# both sides:
#   flint serve --threads 1 --proxy /up/=http://127.0.0.1:PORT (its default pool: every
#               connection that comes back kept, up to 256 per address and thread)
#   nginx       proxy_pass to an upstream with `keepalive 32`, `proxy_http_version 1.1`,
#               `proxy_set_header Connection ""`
#   h2o         num-threads 1, proxy.reverse.url (h2o keeps upstream connections by default)
#   haproxy     nbthread 1, mode http, option http-keep-alive, http-reuse always
# None of them logs requests: flint serve has no --access-log, nginx `access_log off`, h2o no
# access-log, HAProxy no `log` line (its default: nothing logged); error logs only.
# wrk (-t1, CONNS keep-alive connections) runs pinned to CLIENT_CPU with the upstreams. The
# servers take turns (A B C A B C ...) for ROUNDS rounds of DUR; reported per server: medians
# (min-max) of requests/s, the proxy's CPU per request (its own process, the upstream's apart),
# the upstream's, how busy the proxy's core was, and flint over each peer; then, with
# SYSCALLS=strace, each proxy once more under strace -c -f for SYS_DUR: syscalls per request.
# Then HTTP/2 in front (H2_STREAMS > 0): flint and h2o, those of SERVERS that take cleartext
# HTTP/2 with prior knowledge on the same port, under `h2load -t 1 -c CONNS -m H2_STREAMS` for
# ROUNDS rounds of DUR (A B A B), HTTP/1.1 to the upstream as before: the same table. Last
# (MEM_CONNS > 0), each proxy's memory per idle client connection: MEM_CONNS keep-alive
# connections, opened one after the other, each proxying one request and staying open; the
# proxy's resident memory (VmRSS) after, minus before, divided by MEM_CONNS.
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), SERVERS ("flint nginx h2o haproxy"; h2o and
# haproxy left out with a note when not installed), APP_CPU (CLIENT_CPU), SYSCALLS (strace |
# none), SYS_DUR (3s), H2_STREAMS (10; 0 skips HTTP/2), MEM_CONNS (1000; 0 skips), FLINT,
# HAPROXY (/usr/sbin/haproxy), SERVER_CPU, CLIENT_CPU. Needs wrk, curl, strace, h2load
# (scripts/install-peers.sh).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
SERVERS=${SERVERS:-flint nginx h2o haproxy}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
APP_CPU=${APP_CPU:-$CLIENT_CPU}
SYSCALLS=${SYSCALLS:-strace}
SYS_DUR=${SYS_DUR:-3s}
H2_STREAMS=${H2_STREAMS:-10}
MEM_CONNS=${MEM_CONNS:-1000}

for d in "$DUR" "$SYS_DUR"; do seconds "$d" >/dev/null; done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a positive number"
[[ $H2_STREAMS =~ ^[0-9]+$ ]] || die "H2_STREAMS must be a number (0 skips HTTP/2)"
[[ $MEM_CONNS =~ ^[0-9]+$ ]] || die "MEM_CONNS must be a number (0 skips the memory)"
[[ $APP_CPU =~ ^[0-9]+$ ]] || die "APP_CPU must be a CPU number"
[[ $APP_CPU != "$SERVER_CPU" ]] || die "APP_CPU must differ from SERVER_CPU"
need_flint
servers=""
for s in $SERVERS; do
    case $s in
    flint) ;;
    nginx) need "$NGINX" ;;
    h2o) if ! command -v h2o >/dev/null 2>&1; then
        note "h2o is not installed: left out (scripts/install-peers.sh installs it)"
        continue
    fi ;;
    haproxy) if [[ ! -x $HAPROXY ]]; then
        note "haproxy is not installed: left out (scripts/install-peers.sh installs it)"
        continue
    fi ;;
    *) die "unknown server '$s' in SERVERS (flint, nginx, h2o, haproxy)" ;;
    esac
    servers+=" $s"
done
[[ " $servers " == *" flint "* ]] || die "SERVERS must include flint: every ratio is flint's"
case $SYSCALLS in
strace) need strace ;;
none) ;;
*) die "SYSCALLS: strace or none" ;;
esac
need wrk curl
h2_servers=""
if ((H2_STREAMS > 0)); then
    need h2load
    for s in $servers; do
        [[ $s == flint || $s == h2o ]] && h2_servers+=" $s"
    done
fi
bench_init
taskset -c "$APP_CPU" true 2>/dev/null || die "cannot pin to CPU $APP_CPU (APP_CPU)"

records="$WORK/records.jsonl"
docs="$WORK/docs"
mkdir -p "$docs/up"
head -c 1024 /dev/zero | tr '\0' x >"$docs/up/1k.bin"
chmod -R a+rX "$WORK"

declare -A PID PORT APP_PID APP_PORT
# start_upstream NAME: flint serve over $docs on APP_CPU.
start_upstream() {
    local name=$1 port
    port=$(free_port)
    taskset -c "$APP_CPU" "$FLINT" serve "$docs" --listen "127.0.0.1:$port" --threads 1 \
        >"$WORK/up-$name.log" 2>&1 &
    APP_PID[$name]=$!
    APP_PORT[$name]=$port
    STARTED+=("$!")
    "${MEASURE[@]}" wait-port --port "$port" --pid "$!" --timeout 15 ||
        die "the upstream for $name did not start (see $WORK/up-$name.log)"
}

# HTTP/2 in front puts CONNS x H2_STREAMS requests in flight (400 by default): within a proxy
# mount's own max_in_flight (1,024 per thread by default), as the peers take them uncapped.
start_flint_proxy() {
    PORT[flint]=$(free_port)
    start_pinned flint-serve "${PORT[flint]}" "$FLINT" serve "$docs" \
        --listen "127.0.0.1:${PORT[flint]}" --threads 1 \
        --proxy "/up/=http://127.0.0.1:${APP_PORT[flint]}"
    PID[flint]=$LAST_PID
}

start_nginx_proxy() {
    local dir="$WORK/nginx"
    PORT[nginx]=$(free_port)
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    upstream up { server 127.0.0.1:${APP_PORT[nginx]}; keepalive 32; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location /up/ {
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
    start_pinned nginx "${PORT[nginx]}" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    PID[nginx]=$LAST_PID
}

start_h2o_proxy() {
    local dir="$WORK/h2o"
    PORT[h2o]=$(free_port)
    mkdir -p "$dir"
    cat >"$dir/h2o.conf" <<EOF
num-threads: 1
error-log: $dir/error.log
http1-request-timeout: 65
http2-idle-timeout: 65
listen:
  host: 127.0.0.1
  port: ${PORT[h2o]}
hosts:
  default:
    paths:
      /up/:
        proxy.reverse.url: http://127.0.0.1:${APP_PORT[h2o]}/up/
EOF
    start_pinned h2o "${PORT[h2o]}" h2o -c "$dir/h2o.conf"
    PID[h2o]=$LAST_PID
}

start_haproxy_proxy() {
    local dir="$WORK/haproxy"
    PORT[haproxy]=$(free_port)
    mkdir -p "$dir"
    # No `log` line: HAProxy logs nothing, as the others log no requests.
    cat >"$dir/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 8192
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 65s
    timeout server 65s
    timeout http-keep-alive 65s
frontend front
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend up
backend up
    server up 127.0.0.1:${APP_PORT[haproxy]}
EOF
    # -db: in the foreground, no daemon (its one process is the one measured).
    start_pinned haproxy "${PORT[haproxy]}" "$HAPROXY" -db -f "$dir/haproxy.cfg"
    PID[haproxy]=$LAST_PID
}

for s in $servers; do
    start_upstream "$s"
    "start_${s}_proxy"
done

# check SERVER: a 200 of exactly 1024 bytes through it (a wrong setup fails here).
check() {
    local url="http://127.0.0.1:${PORT[$1]}/up/1k.bin" got
    got=$(curl -s -m 30 -o /dev/null -w '%{http_code} %{size_download}' "$url" || true)
    [[ $got == "200 1024" ]] || die "$1 answered '$got' (status, bytes), not '200 1024', to $url"
}

# measure SERVER DUR PURPOSE ROUND: one wrk run, recorded.
measure() {
    local s=$1 dur=$2 purpose=$3 round=$4 sys=none
    [[ $purpose == syscalls ]] && sys=$SYSCALLS
    "${MEASURE[@]}" run --out "$records" --log "$WORK/load.log" --parse wrk \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "${PID[$s]}" \
        --app-pid "${APP_PID[$s]}" --syscalls "$sys" --timeout $(($(seconds "$dur") + 60)) \
        --label "app=upstream" --label "server=$s" --label "purpose=$purpose" \
        --label "round=$round" \
        --label "title=flint serve upstream (app CPU), 1 KiB, $CONNS connections" -- \
        wrk -t1 -c "$CONNS" -d "$dur" "http://127.0.0.1:${PORT[$s]}/up/1k.bin"
}

echo "== reverse proxy: $servers; $DUR x $ROUNDS rounds; syscalls: $SYSCALLS"
describe
echo "h2o:     $(h2o --version 2>&1 | head -1 || echo none)"
echo "haproxy: $("$HAPROXY" -v 2>&1 | head -1 || echo none)"
echo "upstreams (flint serve) on CPU $APP_CPU (with the load generator)"
for s in $servers; do check "$s"; done
note "warm-up"
for s in $servers; do measure "$s" 2s warm 0; done
for ((round = 1; round <= ROUNDS; round++)); do
    for s in $servers; do measure "$s" "$DUR" timed "$round"; done
done
if [[ $SYSCALLS != none ]]; then
    for s in $servers; do measure "$s" "$SYS_DUR" syscalls 0; done
fi

# measure_h2 SERVER DUR ROUND: one h2load run (cleartext HTTP/2, prior knowledge), recorded
# under its own "app" so that it makes its own table.
measure_h2() {
    local s=$1 dur=$2 round=$3
    "${MEASURE[@]}" run --out "$records" --log "$WORK/h2load.log" --parse h2load \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "${PID[$s]}" \
        --app-pid "${APP_PID[$s]}" --syscalls none --timeout $(($(seconds "$dur") + 60)) \
        --label "app=upstream, HTTP/2 in front" --label "server=$s" --label "purpose=timed" \
        --label "round=$round" \
        --label "title=h2load -c $CONNS -m $H2_STREAMS over h2c, HTTP/1.1 upstream" -- \
        h2load -t 1 -c "$CONNS" -m "$H2_STREAMS" -D "$(seconds "$dur")" \
        "http://127.0.0.1:${PORT[$s]}/up/1k.bin"
}

if [[ -n $h2_servers ]]; then
    note "HTTP/2 in front:$h2_servers"
    for s in $h2_servers; do
        taskset -c "$CLIENT_CPU" h2load -t 1 -c 4 -m 10 -n 2000 \
            "http://127.0.0.1:${PORT[$s]}/up/1k.bin" >"$WORK/h2-warmup.log" 2>&1 ||
            die "HTTP/2 warm-up of $s failed: $(tail -5 "$WORK/h2-warmup.log")"
        grep -q "2000 succeeded" "$WORK/h2-warmup.log" ||
            die "$s over HTTP/2: not every warm-up request succeeded: $(grep -E 'requests:|status' "$WORK/h2-warmup.log")"
    done
    for ((round = 1; round <= ROUNDS; round++)); do
        for s in $h2_servers; do measure_h2 "$s" "$DUR" "$round"; done
    done
fi

# The same table and ratios as bench/fastcgi.sh's ("app" is the upstream).
"${MEASURE[@]}" summary-fastcgi "$records"

# Memory per idle proxied client connection: MEM_CONNS connections, one after the other, each
# proxying one request and then held open; the proxy's VmRSS after minus before.
if ((MEM_CONNS > 0)); then
    echo
    echo "== memory per idle client connection that proxied one request ($MEM_CONNS connections)"
    for s in $servers; do
        taskset -c "$CLIENT_CPU" python3 - "${PORT[$s]}" "${PID[$s]}" "$MEM_CONNS" "$s" <<'EOF'
import socket, sys
port, pid, n, name = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
def response(c):
    got = b""
    while b"\r\n\r\n" not in got:
        part = c.recv(65536)
        if not part:
            sys.exit(f"{name}: closed before a response")
        got += part
    head, body = got.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit(f"{name}: {head.splitlines()[0]!r}")
    length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n")
                  if l.lower().startswith(b"content-length:"))
    while len(body) < length:
        part = c.recv(65536)
        if not part:
            sys.exit(f"{name}: closed mid-body")
        body += part
before = rss(pid)
conns = []
for _ in range(n):
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    c.sendall(b"GET /up/1k.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
    response(c)
    conns.append(c)
after = rss(pid)
# Every connection still open (none closed by an idle timeout while the others were made).
still = 0
for c in conns:
    c.setblocking(False)
    try:
        still += 0 if c.recv(1) == b"" else 1
    except BlockingIOError:
        still += 1
print(f"{name:8} {(after - before) / n / 1024:8.1f} KiB per idle connection "
      f"({before / 2**20:.1f} -> {after / 2**20:.1f} MiB; {still} of {n} open at the end)")
for c in conns:
    c.close()
EOF
    done
fi
