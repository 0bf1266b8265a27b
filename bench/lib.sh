# shellcheck shell=bash disable=SC2034
# (SC2034: the globals set here are read by the scripts that source this file.)
# Shared by bench/client.sh and bench/server.sh: sourced, never run.
#
# Starts servers pinned to SERVER_CPU in a private temp dir, waits for them by polling a connect
# (bounded, no fixed sleeps), and stops everything it started when the script exits, however it
# exits. The measuring itself (CPU times, syscalls, parsing, medians) is in measure.py.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
MEASURE=(python3 "$BENCH_DIR/measure.py")
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
NGINX=${NGINX:-/usr/sbin/nginx}
FLOOR_SRC=${FLOOR_SRC:-$BENCH_DIR/floor}
FLINT=${FLINT:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/flint}
# FLINT_ARGS: more options for every measured `flint bench` (e.g. "--busy-poll 0us").
read -ra FLINT_EXTRA <<<"${FLINT_ARGS:-}"
WORK=""
META=()
STARTED=()

die() {
    echo "$(basename "$0"): error: $*" >&2
    exit 1
}

note() {
    echo "$*" >&2
}

# need CMD...: every command must be on PATH (or be an executable path).
need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || die "'$c' not found: run scripts/install-deps.sh (as root)"
    done
}

need_flint() {
    [[ -x "$FLINT" ]] || die "no flint binary at $FLINT: build it (cargo build --release -p flint)" \
        "or set FLINT=/path/to/flint, or leave flint out (see bench/README.md)"
}

# stop_pid PID: SIGTERM, wait up to 5 s, then SIGKILL; reaps it (it is our child).
stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

on_exit() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${STARTED[@]}"; do
        stop_pid "$pid"
    done
    if [[ -n "$WORK" && -d "$WORK" ]]; then
        if [[ $rc -ne 0 && -n "${KEEP_WORK:-}" ]]; then
            note "kept $WORK for inspection"
        else
            rm -rf "$WORK"
        fi
    fi
    [[ $rc -eq 0 ]] || note "$(basename "$0"): failed (exit $rc)"
    exit "$rc"
}

# bench_init: a private work dir, cleanup on any exit, and checks that apply to every script.
bench_init() {
    need python3 taskset gcc
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/flint-bench.XXXXXX")
    trap on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    taskset -c "$SERVER_CPU" true 2>/dev/null || die "cannot pin to CPU $SERVER_CPU (SERVER_CPU)"
    taskset -c "$CLIENT_CPU" true 2>/dev/null || die "cannot pin to CPU $CLIENT_CPU (CLIENT_CPU)"
    [[ "$SERVER_CPU" != "$CLIENT_CPU" ]] || die "SERVER_CPU and CLIENT_CPU must differ"
    RUSAGE_BIN="$WORK/rusage"
    gcc -O2 -Wall -o "$RUSAGE_BIN" "$BENCH_DIR/rusage.c" || die "cannot build bench/rusage.c"
}

# seconds DUR: 10 or 10s or 2m -> whole seconds (cfloor and the watchdog need a number).
seconds() {
    local d=$1
    if [[ $d =~ ^([0-9]+)s?$ ]]; then
        echo "${BASH_REMATCH[1]}"
    elif [[ $d =~ ^([0-9]+)m$ ]]; then
        echo $((BASH_REMATCH[1] * 60))
    else
        die "duration '$d': use whole seconds (10s) or minutes (2m)"
    fi
}

free_port() {
    "${MEASURE[@]}" port
}

# start_pinned NAME PORT CMD...: runs CMD on SERVER_CPU in the background, waits until PORT
# accepts connections; sets LAST_PID. taskset execs CMD, so the PID is the server's own.
start_pinned() {
    local name=$1 port=$2
    shift 2
    taskset -c "$SERVER_CPU" "$@" >"$WORK/$name.log" 2>&1 &
    LAST_PID=$!
    STARTED+=("$LAST_PID")
    if ! "${MEASURE[@]}" wait-port --port "$port" --pid "$LAST_PID" --timeout 15; then
        note "--- $name's output ($WORK/$name.log):"
        cat "$WORK/$name.log" >&2 || true
        die "$name did not start: $*"
    fi
}

# make_docroot DIR: the benchmark files (500.bin, 1k.bin ... 1m.bin).
make_docroot() {
    "${MEASURE[@]}" docroot "$1"
}

# make_cert DIR: a self-signed ECDSA P-256 certificate for localhost and 127.0.0.1, as
# DIR/cert.pem and DIR/key.pem.
make_cert() {
    need openssl
    mkdir -p "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$1/key.pem" -out "$1/cert.pem" >"$WORK/openssl.log" 2>&1 ||
        die "cannot make a certificate: $(tail -3 "$WORK/openssl.log")"
}

# start_nginx DOCROOT [TLSDIR]: sets NGINX_PID and NGINX_PORT. With TLSDIR (make_cert's), HTTPS
# only, TLS 1.2 and 1.3, a session cache and tickets, as flint serve has.
start_nginx() {
    local root=$1 tls=${2:-} dir="$WORK/nginx" listen
    need "$NGINX"
    NGINX_PORT=$(free_port)
    listen="listen 127.0.0.1:$NGINX_PORT;"
    if [[ -n $tls ]]; then
        dir="$WORK/nginx-tls"
        listen="listen 127.0.0.1:$NGINX_PORT ssl; ssl_certificate $tls/cert.pem;"
        listen+=" ssl_certificate_key $tls/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
        listen+=" ssl_session_cache shared:SSL:16m; ssl_session_tickets on;"
    fi
    mkdir -p "$dir"
    sed -e "s|@DIR@|$dir|g" -e "s|@ROOT@|$root|g" -e "s|listen 127.0.0.1:@PORT@;|$listen|" \
        "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
    start_pinned "${dir##*/}" "$NGINX_PORT" "$NGINX" -p "$dir" -e "$dir/error.log" \
        -c "$dir/nginx.conf"
    NGINX_PID=$LAST_PID
}

# start_flint DOCROOT [TLSDIR]: `flint serve`, one thread (HTTPS with TLSDIR); sets FLINT_PID
# and FLINT_PORT.
start_flint() {
    local root=$1 tls=${2:-} name=flint-serve
    local -a extra=()
    need_flint
    FLINT_PORT=$(free_port)
    if [[ -n $tls ]]; then
        extra=(--tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem")
        name=flint-serve-tls
    fi
    start_pinned "$name" "$FLINT_PORT" "$FLINT" serve "$root" \
        --listen "127.0.0.1:$FLINT_PORT" --threads 1 "${extra[@]}"
    FLINT_PID=$LAST_PID
}

# build_floor: compiles the floor server and client into $WORK (FLOOR_BIN, CFLOOR_BIN).
build_floor() {
    need gcc
    [[ -f "$FLOOR_SRC/floor.c" && -f "$FLOOR_SRC/cfloor.c" ]] ||
        die "floor sources not found in $FLOOR_SRC (set FLOOR_SRC)"
    FLOOR_BIN="$WORK/floor"
    CFLOOR_BIN="$WORK/cfloor"
    gcc -O2 -w -o "$FLOOR_BIN" "$FLOOR_SRC/floor.c" || die "cannot build floor.c"
    gcc -O2 -w -o "$CFLOOR_BIN" "$FLOOR_SRC/cfloor.c" || die "cannot build cfloor.c"
}

# start_floor: the floor server (fixed 1 KiB response); sets FLOOR_PID and FLOOR_PORT.
start_floor() {
    FLOOR_PORT=$(free_port)
    start_pinned floor "$FLOOR_PORT" "$FLOOR_BIN" "$FLOOR_PORT"
    FLOOR_PID=$LAST_PID
}

# results_path KIND: where RESULTS asks the JSON to go (empty: nowhere).
# RESULTS=1 -> results/KIND-DATE.json in the repository; RESULTS=FILE -> FILE.
results_path() {
    case "${RESULTS:-}" in
    "" | 0) echo "" ;;
    1)
        mkdir -p "$REPO_DIR/results"
        echo "$REPO_DIR/results/$1-$(date +%Y%m%d-%H%M%S).json"
        ;;
    *) echo "$RESULTS" ;;
    esac
}

# describe: what was measured on, for the top of each report; also sets META (for the JSON).
describe() {
    local flint_v="not used" nginx_v wrk_v loadavg now
    [[ -x "$FLINT" ]] && flint_v=$("$FLINT" --version 2>/dev/null || echo "$FLINT")
    nginx_v=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')
    wrk_v=$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2 || true)
    loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    echo "date:    $now   kernel: $(uname -r)   cpus: $(nproc)"
    echo "server on CPU $SERVER_CPU, load on CPU $CLIENT_CPU; loadavg $loadavg"
    echo "nginx:   $nginx_v   wrk: $wrk_v"
    echo "flint:   $flint_v ($FLINT)${FLINT_ARGS:+ with $FLINT_ARGS}"
    META=(--meta "date=$now" --meta "kernel=$(uname -r)" --meta "cpus=$(nproc)"
        --meta "loadavg_at_start=$loadavg" --meta "nginx=$nginx_v" --meta "wrk=$wrk_v"
        --meta "flint=$flint_v" --meta "flint_args=${FLINT_ARGS:-}" --meta "server_cpu=$SERVER_CPU"
        --meta "client_cpu=$CLIENT_CPU")
}
