#!/usr/bin/env bash
# The load generator over HTTPS: flint bench against wrk and h2load, same nginx, same certificate.
#
# nginx (one process, pinned to SERVER_CPU) serves a 1 KiB file over TLS with an ECDSA P-256
# certificate this script makes (openssl), session cache and tickets off so that every new
# connection is a full handshake whoever the client is. Each client, pinned to CLIENT_CPU, runs
# in turn, ROUNDS times (A B C A B C ...), in two cases:
#   keepalive: CONNS connections kept alive for DUR;
#   handshake: a full handshake per request (flint --http 1.0; wrk with Connection: close, which
#              makes it reconnect; h2load with HS_CONNS connections of one request each).
# Reported: medians of requests/s and client CPU per request (user+sys of the client process /
# requests), the ratios, and flint's memory per TLS connection (max RSS at MEM_CONNS keep-alive
# connections minus max RSS at CONNS, divided by the difference). flint runs with -k as wrk and
# h2load do not verify certificates either (verification costs one check per handshake).
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), MEM_CONNS (1000), HS_CONNS (2000),
# CLIENTS ("flint wrk h2load"), FLINT, FLINT_ARGS, RESULTS, SERVER_CPU, CLIENT_CPU.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
MEM_CONNS=${MEM_CONNS:-1000}
HS_CONNS=${HS_CONNS:-2000}
CLIENTS=${CLIENTS:-flint wrk h2load}

secs=$(seconds "$DUR")
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ && $MEM_CONNS =~ ^[1-9][0-9]*$ && $HS_CONNS =~ ^[1-9][0-9]*$ ]] ||
    die "CONNS/MEM_CONNS/HS_CONNS: numbers"
((MEM_CONNS > CONNS)) || die "MEM_CONNS must be larger than CONNS"
for c in $CLIENTS; do
    case $c in
    flint) need_flint ;;
    wrk) need wrk ;;
    h2load) need h2load ;;
    *) die "unknown client '$c' in CLIENTS (flint, wrk, h2load)" ;;
    esac
done

bench_init
need "$NGINX" openssl
records="$WORK/records.jsonl"
out_json=$(results_path tls-client)
make_docroot "$WORK/docs"

# The certificate: ECDSA P-256, for localhost and 127.0.0.1, valid for a day.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$WORK/openssl.log" 2>&1 ||
    die "openssl could not make the certificate: $(cat "$WORK/openssl.log")"

# nginx.conf.in with the listener made TLS.
dir="$WORK/nginx"
mkdir -p "$dir"
NGINX_PORT=$(free_port)
tls="ssl; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;"
tls+=" ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache off; ssl_session_tickets off;"
sed -e "s|@DIR@|$dir|g" -e "s|@ROOT@|$WORK/docs|g" -e "s|@PORT@|$NGINX_PORT|g" \
    -e "s|listen 127.0.0.1:$NGINX_PORT;|listen 127.0.0.1:$NGINX_PORT $tls|" \
    "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
grep -q "ssl_certificate" "$dir/nginx.conf" || die "could not make nginx.conf.in's listener TLS"
start_pinned nginx "$NGINX_PORT" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
NGINX_PID=$LAST_PID
url="https://127.0.0.1:$NGINX_PORT"

echo "== TLS client benchmark: nginx, 1 KiB over HTTPS (ECDSA P-256), $DUR x $ROUNDS rounds"
describe

# run_client TOOL ROUND CONNECTIONS KIND: one measured run, appended to $records.
run_client() {
    local tool=$1 round=$2 conns=$3 kind=$4 json="$WORK/flint-$1-$2-$3-$4.json"
    local cmd
    case $tool:$kind in
    flint:memory)
        # Pages, not a duration: every connection's handshake must be done before it counts,
        # however slow MEM_CONNS handshakes are on this machine.
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$url" /1k.bin -k -t 1 -c "$conns"
            -n $((conns * 4)) --json "$json" -q --report none)
        ;;
    flint:handshake)
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$url" /1k.bin -k --http 1.0 -t 1 -c "$conns"
            -d "$DUR" --json "$json" -q --report none)
        ;;
    flint:*)
        cmd=("$FLINT" bench "${FLINT_EXTRA[@]}" "$url" /1k.bin -k -t 1 -c "$conns" -d "$DUR"
            --json "$json" -q --report none)
        ;;
    wrk:handshake) cmd=(wrk -t1 -c "$conns" -d "$DUR" -H "Connection: close" "$url/1k.bin") ;;
    wrk:*) cmd=(wrk -t1 -c "$conns" -d "$DUR" "$url/1k.bin") ;;
    h2load:handshake) cmd=(h2load --h1 -t 1 -c "$HS_CONNS" -n "$HS_CONNS" "$url/1k.bin") ;;
    h2load:*) cmd=(h2load --h1 -t 1 -c "$conns" -D "$secs" "$url/1k.bin") ;;
    esac
    "${MEASURE[@]}" run --out "$records" --log "$WORK/$tool.log" --parse "$tool" \
        --json-file "$json" --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "$NGINX_PID" \
        --timeout $((secs + 60)) --label "kind=$kind" --label "tool=$tool" \
        --label "round=$round" --label "connections=$conns" -- "${cmd[@]}"
}

# Warm nginx (file cache, CPU clocks) before anything is measured.
taskset -c "$CLIENT_CPU" wrk -t1 -c "$CONNS" -d 1s "$url/1k.bin" >"$WORK/warmup.log" 2>&1 ||
    die "warm-up run (wrk) failed: $(cat "$WORK/warmup.log")"

for ((round = 1; round <= ROUNDS; round++)); do
    note "round $round/$ROUNDS"
    for tool in $CLIENTS; do
        run_client "$tool" "$round" "$CONNS" client
    done
    for tool in $CLIENTS; do
        run_client "$tool" "$round" "$CONNS" handshake
    done
done
if [[ " $CLIENTS " == *" flint "* ]]; then
    note "memory: flint with $MEM_CONNS TLS connections"
    run_client flint 1 "$MEM_CONNS" memory
fi

echo
echo "== keep-alive, $CONNS connections"
"${MEASURE[@]}" summary-client "$records" --kind client --connections "$CONNS" "${META[@]}" \
    --meta "dur=$DUR" --meta "rounds=$ROUNDS" --meta "conns=$CONNS" \
    ${out_json:+--json-out "${out_json%.json}-keepalive.json"}
echo
echo "== a full handshake per request (per request = per handshake)"
"${MEASURE[@]}" summary-client "$records" --kind handshake --connections "$CONNS" "${META[@]}" \
    --meta "dur=$DUR" --meta "rounds=$ROUNDS" --meta "conns=$CONNS" \
    ${out_json:+--json-out "${out_json%.json}-handshake.json"}
