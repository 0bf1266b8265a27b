#!/usr/bin/env bash
# What HTTP Basic authentication costs flint serve: the same server with and without a protected
# prefix, every request carrying the same valid password.
#
# Two flint serve processes, each one thread pinned to SERVER_CPU, serve the same files: "plain"
# protects nothing, "auth" protects / with an htpasswd file of one bcrypt user (cost
# BCRYPT_COST). wrk (-t1, CONNS keep-alive connections, pinned to CLIENT_CPU) sends both the
# same request for /1k.bin with that user's `Authorization` (plain ignores it). They take turns
# (plain auth plain auth ...) for ROUNDS rounds of DUR; reported: medians (min-max) of
# requests/s and server CPU per request, and auth over plain.
#
# Then what one check costs, as the event loop pays it: a server whose verified credentials are
# never kept (`auth_cache_ms = 0`) answers one connection (wrk -c1) for CHECK_DUR per hash in
# CHECK_HASHES (bcrypt at cost 5 and 10, SHA-512-crypt at 5000 rounds); its CPU per request less
# the plain server's is one check, and the whole time the loop cannot answer anything else.
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), BCRYPT_COST (5), CHECK_DUR (3s), CHECK_HASHES
# ("bcrypt-5 bcrypt-10 sha512"), FLINT, SERVER_CPU, CLIENT_CPU. Needs wrk and htpasswd
# (apache2-utils).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
BCRYPT_COST=${BCRYPT_COST:-5}
CHECK_DUR=${CHECK_DUR:-3s}
CHECK_HASHES=${CHECK_HASHES:-bcrypt-5 bcrypt-10 sha512}

for d in "$DUR" "$CHECK_DUR"; do seconds "$d" >/dev/null; done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a positive number"
[[ $BCRYPT_COST =~ ^[0-9]+$ ]] && ((BCRYPT_COST >= 4 && BCRYPT_COST <= 17)) ||
    die "BCRYPT_COST must be 4 to 17 (htpasswd -C)"
for h in $CHECK_HASHES; do
    [[ $h =~ ^bcrypt-([4-9]|1[0-7])$ || $h == sha256 || $h == sha512 ]] ||
        die "CHECK_HASHES: '$h' is not bcrypt-COST (4 to 17), sha256 or sha512"
done
need wrk htpasswd
need_flint
bench_init

records="$WORK/records.jsonl"
docs="$WORK/docs"
make_docroot "$docs"
USER_NAME=bench
PASSWORD=bench-password
AUTH="Authorization: Basic $(printf '%s:%s' "$USER_NAME" "$PASSWORD" | base64 -w0)"

# htpasswd_line HASH: the user's line in that scheme.
htpasswd_line() {
    case $1 in
    bcrypt-*) htpasswd -nbB -C "${1#bcrypt-}" "$USER_NAME" "$PASSWORD" ;;
    sha256) htpasswd -nb2 "$USER_NAME" "$PASSWORD" ;;
    sha512) htpasswd -nb5 "$USER_NAME" "$PASSWORD" ;;
    esac | head -1
}

# start_serve NAME [CONFIG_LINES]: flint serve over $docs, one thread, with a config file of
# CONFIG_LINES; sets PORT[NAME] and PID[NAME].
declare -A PID PORT
start_serve() {
    local name=$1 config="$WORK/$1.toml" port
    printf '%s\n' "${2:-}" >"$config"
    port=$(free_port)
    start_pinned "serve-$name" "$port" "$FLINT" serve "$docs" --listen "127.0.0.1:$port" \
        --threads 1 --config "$config"
    PID[$name]=$LAST_PID PORT[$name]=$port
}

# zone FILE [CACHE_MS]: the config lines that protect / with FILE.
zone() {
    local lines=""
    [[ -n ${2:-} ]] && lines="auth_cache_ms = $2"$'\n'
    printf '%s[[auth]]\nprefix = "/"\nfile = "%s"\n' "$lines" "$1"
}

htpasswd_line "bcrypt-$BCRYPT_COST" >"$WORK/htpasswd"
start_serve plain
start_serve auth "$(zone "$WORK/htpasswd")"

# measure NAME CONNS DUR PURPOSE ROUND [LABEL...]: one wrk run against NAME, recorded.
measure() {
    local name=$1 conns=$2 dur=$3 purpose=$4 round=$5
    shift 5
    "${MEASURE[@]}" run --out "$records" --log "$WORK/load.log" --parse wrk \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "${PID[$name]}" \
        --timeout $(($(seconds "$dur") + 60)) --label "server=$name" --label "purpose=$purpose" \
        --label "round=$round" "$@" -- \
        wrk -t1 -c "$conns" -d "$dur" -H "$AUTH" "http://127.0.0.1:${PORT[$name]}/1k.bin"
}

echo "== Basic authentication: plain vs auth (bcrypt cost $BCRYPT_COST), 1 KiB keep-alive," \
    "$CONNS connections, $DUR x $ROUNDS rounds"
describe
# expect NAME STATUS [CURL_ARGS...]: the server answers /1k.bin with STATUS (within 30 s: a
# first answer on a loaded machine can be slow, and the measured runs must not include it).
expect() {
    local name=$1 want=$2 got
    shift 2
    got=$(curl -s -m 30 -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:${PORT[$name]}/1k.bin" ||
        true)
    [[ $got == "$want" ]] || die "$name answered $got, not $want, to: curl $* /1k.bin"
}
expect plain 200 -H "$AUTH"
expect auth 200 -H "$AUTH"
expect auth 401
for s in plain auth; do measure "$s" "$CONNS" 2s warm 0; done
for ((round = 1; round <= ROUNDS; round++)); do
    for s in plain auth; do measure "$s" "$CONNS" "$DUR" timed "$round"; done
done

note "the cost of one check: verified credentials not kept, one connection"
measure plain 1 "$CHECK_DUR" check 0 --label "hash=none"
for h in $CHECK_HASHES; do
    htpasswd_line "$h" >"$WORK/htpasswd-$h"
    start_serve "check-$h" "$(zone "$WORK/htpasswd-$h" 0)"
    expect "check-$h" 200 -H "$AUTH"
    measure "check-$h" 1 "$CHECK_DUR" check 0 --label "hash=$h"
    stop_pid "${PID[check-$h]}"
done

echo
"${MEASURE[@]}" summary-auth "$records"
