#!/usr/bin/env bash
# The load generator over HTTP/2: flint bench --http 2 against h2load (nghttp2's own client),
# same servers, same files.
#
# Servers, each one process pinned to SERVER_CPU: Debian's nginx (`http2` on its listener) and
# h2o, each over TLS (ALPN h2, an ECDSA P-256 certificate this script makes) and over cleartext
# (h2c, prior knowledge). For each server, transport and streams per connection M in MS, the two
# clients, pinned to CLIENT_CPU, run in turn ROUNDS times (A B A B ...): CONNS connections, M
# requests in flight on each (flint --streams M, h2load -m M), a 1 KiB file, for DUR. Then the
# same with a 1 MiB file (BIG_CONNS connections, one stream each) for bandwidth, and flint's
# memory per HTTP/2 connection over TLS (max RSS at MEM_CONNS connections minus max RSS at
# CONNS, over the difference).
#
# Reported per case: medians of requests/s, client CPU per request (user+sys of the client
# process / requests), the server's CPU per request and its busy share of a core, and the ratios
# flint/h2load of requests/s and of client CPU per request, also paired within each round, and
# of the server's CPU per request (paired: what each client's traffic costs the server, still
# comparable when other load keeps the server's core from being saturated); then whether
# the case was server-bound (both clients kept the server's core busy: equal requests/s is the
# claim) or client-bound. flint runs with -k, as h2load does not verify certificates either.
#
# Environment: DUR (5s), ROUNDS (3), CONNS (40), MS ("1 10 100"), BIG_CONNS (8), MEM_CONNS
# (1000), SERVERS ("nginx h2o"), TRANSPORTS ("tls h2c"), FLINT, FLINT_ARGS, RESULTS,
# SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-5s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
MS=${MS:-1 10 100}
BIG_CONNS=${BIG_CONNS:-8}
MEM_CONNS=${MEM_CONNS:-1000}
SERVERS=${SERVERS:-nginx h2o}
TRANSPORTS=${TRANSPORTS:-tls h2c}

secs=$(seconds "$DUR")
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ && $BIG_CONNS =~ ^[1-9][0-9]*$ && $MEM_CONNS =~ ^[1-9][0-9]*$ ]] ||
    die "CONNS/BIG_CONNS/MEM_CONNS: numbers"
for m in $MS; do [[ $m =~ ^[1-9][0-9]*$ ]] || die "MS: numbers of streams"; done
need_flint
need h2load openssl
for s in $SERVERS; do
    case $s in
    nginx) need "$NGINX" ;;
    h2o) need h2o ;;
    *) die "unknown server '$s' in SERVERS (nginx, h2o)" ;;
    esac
done
for t in $TRANSPORTS; do [[ $t == tls || $t == h2c ]] || die "TRANSPORTS: tls, h2c"; done

bench_init
records="$WORK/records.jsonl"
out_json=$(results_path h2-client)
make_docroot "$WORK/docs"
make_cert "$WORK/cert"
# h2o serves as `nobody` when started as root.
chmod -R a+rX "$WORK"

# start_h2_nginx TRANSPORT: nginx.conf.in with an HTTP/2 listener; sets PID and URL.
start_h2_nginx() {
    local dir="$WORK/nginx-$1" port listen
    port=$(free_port)
    if [[ $1 == tls ]]; then
        listen="listen 127.0.0.1:$port ssl http2; ssl_certificate $WORK/cert/cert.pem;"
        listen+=" ssl_certificate_key $WORK/cert/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
        URL="https://127.0.0.1:$port"
    else
        listen="listen 127.0.0.1:$port http2;"
        URL="http://127.0.0.1:$port"
    fi
    mkdir -p "$dir"
    sed -e "s|@DIR@|$dir|g" -e "s|@ROOT@|$WORK/docs|g" -e "s|listen 127.0.0.1:@PORT@;|$listen|" \
        "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
    grep -q "http2;" "$dir/nginx.conf" || die "could not give nginx.conf.in an HTTP/2 listener"
    start_pinned "nginx-$1" "$port" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    PID=$LAST_PID
}

# start_h2o TRANSPORT: h2o, one thread, no access log; sets PID and URL.
start_h2o() {
    local dir="$WORK/h2o-$1" port ssl=""
    port=$(free_port)
    mkdir -p "$dir"
    if [[ $1 == tls ]]; then
        ssl=$'\n  ssl:\n    certificate-file: '"$WORK/cert/cert.pem"
        ssl+=$'\n    key-file: '"$WORK/cert/key.pem"$'\n    ocsp-update-interval: 0'
        URL="https://127.0.0.1:$port"
    else
        URL="http://127.0.0.1:$port"
    fi
    cat >"$dir/h2o.conf" <<EOF
num-threads: 1
error-log: $dir/error.log
listen:
  host: 127.0.0.1
  port: $port$ssl
hosts:
  default:
    paths:
      /:
        file.dir: $WORK/docs
EOF
    start_pinned "h2o-$1" "$port" h2o -c "$dir/h2o.conf"
    PID=$LAST_PID
}

# run_client TOOL ROUND KIND CONNS STREAMS FILE [pages]: one measured run into $records.
run_client() {
    local tool=$1 round=$2 kind=$3 conns=$4 m=$5 file=$6 pages=${7:-}
    local json="$WORK/flint-$kind-$round.json" cmd stop
    if [[ -n $pages ]]; then stop=(-n "$pages"); else stop=(-d "$DUR"); fi
    case $tool in
    flint)
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$URL" "$file" --http 2 --streams "$m" -k -t 1
            -c "$conns" "${stop[@]}" --json "$json" -q --report none)
        ;;
    h2load) cmd=(h2load -t 1 -c "$conns" -m "$m" -D "$secs" "$URL$file") ;;
    esac
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$tool.log" --parse "$tool" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$PID" \
        --timeout $((secs + 120)) --label "kind=$kind" --label "tool=$tool" \
        --label "round=$round" --label "connections=$conns" -- "${cmd[@]}"
}

echo "== HTTP/2 client benchmark: flint vs h2load; servers: $SERVERS over $TRANSPORTS"
echo "   1 KiB at -c $CONNS -m {$MS}, 1 MiB at -c $BIG_CONNS -m 1; $DUR x $ROUNDS rounds"
describe
echo "h2load:  $(h2load --version 2>&1 | head -1)   h2o: $(h2o --version 2>&1 | head -1)"

kinds=()
for server in $SERVERS; do
    for transport in $TRANSPORTS; do
        case $server in
        nginx) start_h2_nginx "$transport" ;;
        h2o) start_h2o "$transport" ;;
        esac
        # Warm the server (file cache, CPU clocks) before anything is measured.
        taskset -c "$CLIENT_CPU" h2load -t 1 -c "$CONNS" -D 1 "$URL/1k.bin" >"$WORK/warm.log" 2>&1 ||
            die "warm-up (h2load) against $server/$transport failed: $(tail -3 "$WORK/warm.log")"
        for ((round = 1; round <= ROUNDS; round++)); do
            note "$server/$transport: round $round/$ROUNDS"
            for m in $MS; do
                for tool in flint h2load; do
                    run_client "$tool" "$round" "$server-$transport-m$m" "$CONNS" "$m" /1k.bin
                done
            done
            for tool in flint h2load; do
                run_client "$tool" "$round" "$server-$transport-1m" "$BIG_CONNS" 1 /1m.bin
            done
        done
        for m in $MS; do kinds+=("$server-$transport-m$m"); done
        kinds+=("$server-$transport-1m")
        if [[ $server == "${SERVERS%% *}" && $transport == tls ]]; then
            note "memory: flint with $MEM_CONNS HTTP/2 connections over TLS"
            run_client flint 1 memory "$MEM_CONNS" 1 /1k.bin $((MEM_CONNS * 4))
            MEM_KIND="$server-$transport-m1"
        fi
        stop_pid "$PID"
    done
done

for kind in "${kinds[@]}"; do
    echo
    echo "== $kind"
    mem=()
    [[ $kind == "${MEM_KIND:-}" ]] && mem=(--memory-kind memory)
    "${MEASURE[@]}" summary-client "$records" --kind "$kind" --connections "$CONNS" "${mem[@]}" \
        "${META[@]}" --meta "dur=$DUR" --meta "rounds=$ROUNDS" --meta "conns=$CONNS" \
        ${out_json:+--json-out "${out_json%.json}-$kind.json"}
done
