#!/usr/bin/env bash
# FastCGI: flint serve against nginx and h2o, one 1 KiB response from a FastCGI application.
#
# Two applications, each on a unix socket with a static pool of APP_WORKERS processes that never
# recycle: php-fpm running a one-line PHP script, and bench/fcgi-responder.c (a C responder
# written against the specification: a read and a write per request). Each server has its own
# instance of each (a worker serves one connection at a time, so connections one server keeps
# idle would otherwise hold workers another server waits for). The servers, each one process or
# thread pinned to SERVER_CPU, pass /php/1k.php and /c/1k.fcgi to them:
#   flint serve --threads 1 --fastcgi '*.php=unix:...' --fastcgi '*.fcgi=unix:...' --fastcgi-pool 8
#               (8 idle connections kept, as nginx's keepalive 8 and the figures measured with the
#               default of then; the default is now 4 a thread; extension patterns: a prefix pattern would have it
#               open each leading directory of the path too, looking for the script)
#   nginx       fastcgi_pass to an upstream with `keepalive 8`, `fastcgi_keep_conn on`
#   h2o         num-threads 1, file.custom-handler .php / .fcgi with fastcgi.connect, kept alive
# wrk (-t1, CONNS keep-alive connections) runs pinned to CLIENT_CPU, and so do the applications
# (APP_CPU): the servers' core holds the server alone, so its CPU per request is its own. Per
# application the servers take turns (A B C A B C ...) for ROUNDS rounds of DUR; reported per
# server: medians (min-max) of requests/s, the server's CPU per request (its own process, the
# application not included), the application's CPU per request (master and workers), how busy the
# server's core was, and flint over each peer. Then each server once more under strace -c -f for
# SYS_DUR (a separate run: tracing slows it): syscalls per request, by name.
#
# The applications share CLIENT_CPU with wrk, so on a two-core machine requests/s is usually
# bounded by that core, not by the server's: read CPU per request, and "server busy" below 0.9
# as "the server was not the bottleneck".
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), APPS ("php c"), SERVERS ("flint nginx h2o"; h2o
# is left out with a note when it is not installed), APP_WORKERS (40 per instance: one per
# connection, so no request waits behind an idle kept connection holding a worker), APP_CPU (CLIENT_CPU), SYSCALLS
# (strace | none), SYS_DUR (3s), FLINT, SERVER_CPU, CLIENT_CPU. Needs wrk, php-fpm, curl, strace
# (scripts/install-peers.sh).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
APPS=${APPS:-php c}
SERVERS=${SERVERS:-flint nginx h2o}
APP_WORKERS=${APP_WORKERS:-40}
APP_CPU=${APP_CPU:-$CLIENT_CPU}
SYSCALLS=${SYSCALLS:-strace}
SYS_DUR=${SYS_DUR:-3s}

for d in "$DUR" "$SYS_DUR"; do seconds "$d" >/dev/null; done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a positive number"
[[ $APP_WORKERS =~ ^[1-9][0-9]*$ ]] || die "APP_WORKERS must be a positive number"
[[ $APP_CPU =~ ^[0-9]+$ ]] || die "APP_CPU must be a CPU number"
[[ $APP_CPU != "$SERVER_CPU" ]] || die "APP_CPU must differ from SERVER_CPU"
for a in $APPS; do
    [[ $a == php || $a == c ]] || die "unknown application '$a' in APPS (php, c)"
done
servers=""
for s in $SERVERS; do
    case $s in
    flint) need_flint ;;
    nginx) need "$NGINX" ;;
    h2o) if ! command -v h2o >/dev/null 2>&1; then
        note "h2o is not installed: left out (scripts/install-peers.sh installs it)"
        continue
    fi ;;
    *) die "unknown server '$s' in SERVERS (flint, nginx, h2o)" ;;
    esac
    servers+=" $s"
done
[[ " $servers " == *" flint "* ]] || die "SERVERS must include flint: every ratio is flint's"
case $SYSCALLS in
strace) need strace ;;
none) ;;
*) die "SYSCALLS: strace or none" ;;
esac
PHP_FPM=""
if [[ " $APPS " == *" php "* ]]; then
    PHP_FPM=$(compgen -G '/usr/sbin/php-fpm*' | head -1 || true)
    [[ -n $PHP_FPM ]] || die "no /usr/sbin/php-fpm*: run scripts/install-peers.sh (as root)"
fi
need wrk curl
bench_init
taskset -c "$APP_CPU" true 2>/dev/null || die "cannot pin to CPU $APP_CPU (APP_CPU)"

records="$WORK/records.jsonl"
docs="$WORK/docs"
mkdir -p "$docs/php" "$docs/c"
# Content-Length given, so every server forwards a length rather than chunking.
echo "<?php header('Content-Length: 1024'); echo str_repeat('x', 1024);" >"$docs/php/1k.php"
# The C responder answers without reading the script; the file makes the path one of a script.
echo "answered by fcgi-responder" >"$docs/c/1k.fcgi"
# h2o serves as `nobody` when started as root, and php-fpm's workers run as nobody: both must
# reach the sockets and the scripts.
chmod -R a+rX "$WORK"

declare -A PID PORT APP_PID
# start_app NAME CMD...: an application pinned to APP_CPU, listening on $WORK/NAME.sock
# (NAME: SERVER-APP).
start_app() {
    local name=$1
    shift
    taskset -c "$APP_CPU" "$@" >"$WORK/app-$name.log" 2>&1 &
    APP_PID[$name]=$!
    STARTED+=("$!")
    if ! "${MEASURE[@]}" wait-port --unix "$WORK/$name.sock" --pid "$!" --timeout 30; then
        note "--- $name's output ($WORK/app-$name.log):"
        cat "$WORK/app-$name.log" >&2 || true
        die "application $name did not start: $*"
    fi
}

# start_php NAME: php-fpm, its config written here: a static pool on $WORK/NAME.sock.
start_php() {
    local name=$1 pool_user=""
    # As root php-fpm wants a user for its workers; otherwise it runs them as the caller.
    [[ $(id -u) -eq 0 ]] && pool_user=$'user = nobody\ngroup = nogroup'
    cat >"$WORK/$name.conf" <<EOF
[global]
pid = $WORK/$name.pid
error_log = $WORK/$name.error.log
daemonize = no

[bench]
$pool_user
listen = $WORK/$name.sock
listen.mode = 0666
listen.backlog = 511
pm = static
pm.max_children = $APP_WORKERS
pm.max_requests = 0
EOF
    start_app "$name" "$PHP_FPM" --nodaemonize --fpm-config "$WORK/$name.conf"
}

if [[ " $APPS " == *" c "* ]]; then
    gcc -O2 -Wall -o "$WORK/fcgi-responder" "$BENCH_DIR/fcgi-responder.c" ||
        die "cannot build bench/fcgi-responder.c"
fi
for s in $servers; do
    for a in $APPS; do
        case $a in
        php) start_php "$s-php" ;;
        c) start_app "$s-c" "$WORK/fcgi-responder" "$WORK/$s-c.sock" "$APP_WORKERS" 1024 ;;
        esac
    done
done

start_flint_fcgi() {
    PORT[flint]=$(free_port)
    start_pinned flint-serve "${PORT[flint]}" "$FLINT" serve "$docs" \
        --listen "127.0.0.1:${PORT[flint]}" --threads 1 --fastcgi-pool 8 \
        --fastcgi "*.php=unix:$WORK/flint-php.sock" --fastcgi "*.fcgi=unix:$WORK/flint-c.sock"
    PID[flint]=$LAST_PID
}

# nginx: bench/nginx.conf.in's settings (one process, no access log), and the two upstreams.
start_nginx_fcgi() {
    local dir="$WORK/nginx" a
    PORT[nginx]=$(free_port)
    mkdir -p "$dir"
    {
        cat <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    default_type application/octet-stream;
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
EOF
        for a in php c; do
            printf '    upstream %s { server unix:%s; keepalive 8; }\n' "app_$a" "$WORK/nginx-$a.sock"
        done
        printf '    server {\n        listen 127.0.0.1:%s;\n        root %s;\n' "${PORT[nginx]}" "$docs"
        for a in php c; do
            cat <<EOF
        location /$a/ {
            fastcgi_pass app_$a;
            fastcgi_keep_conn on;
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
        }
EOF
        done
        printf '    }\n}\n'
    } >"$dir/nginx.conf"
    start_pinned nginx "${PORT[nginx]}" "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
    PID[nginx]=$LAST_PID
}

# h2o: one thread, no access log, FastCGI connections kept (fastcgi.timeout.keepalive; its
# default, 0, closes each after its request).
start_h2o_fcgi() {
    local dir="$WORK/h2o" a
    PORT[h2o]=$(free_port)
    mkdir -p "$dir"
    {
        cat <<EOF
num-threads: 1
error-log: $dir/error.log
fastcgi.timeout.keepalive: 60000
listen:
  host: 127.0.0.1
  port: ${PORT[h2o]}
hosts:
  default:
    paths:
EOF
        for a in php c; do
            cat <<EOF
      /$a/:
        file.dir: $docs/$a
        file.custom-handler:
          extension: .$(ext "$a")
          fastcgi.connect:
            port: $WORK/h2o-$a.sock
            type: unix
EOF
        done
    } >"$dir/h2o.conf"
    start_pinned h2o "${PORT[h2o]}" h2o -c "$dir/h2o.conf"
    PID[h2o]=$LAST_PID
}

# ext APP: the extension of its script.
ext() {
    if [[ $1 == php ]]; then echo php; else echo fcgi; fi
}

for s in $servers; do "start_${s}_fcgi"; done

# check SERVER APP: the response is a 200 of exactly 1024 bytes (a wrong setup fails here, not
# as a fast run of error pages).
check() {
    local url="http://127.0.0.1:${PORT[$1]}/$2/1k.$(ext "$2")" got
    got=$(curl -s -m 30 -o /dev/null -w '%{http_code} %{size_download}' "$url" || true)
    [[ $got == "200 1024" ]] || die "$1 answered '$got' (status, bytes), not '200 1024', to $url"
}

# measure SERVER APP DUR PURPOSE ROUND: one wrk run, recorded.
measure() {
    local s=$1 a=$2 dur=$3 purpose=$4 round=$5 sys=none
    [[ $purpose == syscalls ]] && sys=$SYSCALLS
    "${MEASURE[@]}" run --out "$records" --log "$WORK/load.log" --parse wrk \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-pid "${PID[$s]}" \
        --app-pid "${APP_PID[$s-$a]}" --syscalls "$sys" --timeout $(($(seconds "$dur") + 60)) \
        --label "app=$a" --label "server=$s" --label "purpose=$purpose" --label "round=$round" \
        --label "title=$(title "$a")" -- \
        wrk -t1 -c "$CONNS" -d "$dur" "http://127.0.0.1:${PORT[$s]}/$a/1k.$(ext "$a")"
}

title() {
    case $1 in
    php) echo "php-fpm ($APP_WORKERS static workers), one-line script, 1 KiB, $CONNS connections" ;;
    c) echo "C responder ($APP_WORKERS workers), 1 KiB, $CONNS connections" ;;
    esac
}

echo "== FastCGI: $servers; applications: $APPS; $DUR x $ROUNDS rounds; syscalls: $SYSCALLS"
describe
echo "h2o:     $(h2o --version 2>&1 | head -1 || echo none)   php-fpm: $([[ -n $PHP_FPM ]] &&
    "$PHP_FPM" -v 2>/dev/null | head -1 || echo none)"
echo "applications on CPU $APP_CPU (with the load generator)"
for a in $APPS; do
    for s in $servers; do check "$s" "$a"; done
    note "application $a: warm-up"
    for s in $servers; do measure "$s" "$a" 2s warm 0; done
    for ((round = 1; round <= ROUNDS; round++)); do
        for s in $servers; do measure "$s" "$a" "$DUR" timed "$round"; done
    done
    if [[ $SYSCALLS != none ]]; then
        for s in $servers; do measure "$s" "$a" "$SYS_DUR" syscalls 0; done
    fi
done

"${MEASURE[@]}" summary-fastcgi "$records"
