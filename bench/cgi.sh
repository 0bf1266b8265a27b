#!/usr/bin/env bash
# CGI: flint serve against Apache (event MPM + mod_cgid), lighttpd (mod_cgi) and nginx with
# fcgiwrap (nginx runs no CGI itself: fcgiwrap, a FastCGI server, forks and execs the program for
# it), each running the same program for every request; and flint's static files with and
# without a CGI mount.
#
# Each server, its helper processes and the programs they start run pinned to SERVER_CPU, in a
# cgroup of their own (root; cgroup v1 cpuacct or v2): its CPU time is the CPU of everything that
# ran in it, whoever reaped it (mod_cgid's daemon and fcgiwrap leave the kernel to reap). The
# server's own CPU is that of its own processes (by name: flint, apache2, lighttpd, nginx and
# fcgiwrap); the programs' is the rest. wrk -t1 -c CONNS, keep-alive, on CLIENT_CPU. Servers
# alternate within each of ROUNDS rounds (A B C D A B C D); medians, and flint's ratios to each
# peer, also paired within each round.
#
# Cases (CASES, default all): c (a C program writing 1 KiB with its length), sh (the same from a
# /bin/sh script), static (/1k.bin from flint serve with and without `--cgi`).
#
# Environment: DUR (10s), ROUNDS (3), CONNS (40), CASES ("c sh static"), SERVERS ("flint apache
# lighttpd nginx"), FCGIWRAP_CHILDREN (4; each runs one program at a time), FLINT, RESULTS (1:
# results/cgi-DATE.json; or a file name), SERVER_CPU, CLIENT_CPU, KEEP_WORK.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-40}
CASES=${CASES:-c sh static}
SERVERS=${SERVERS:-flint apache lighttpd nginx}
# fcgiwrap's processes: on one core, 2 to 16 kept it busy; 40 left it idle half the time
# (bench/README.md "cgi.sh").
FCGIWRAP_CHILDREN=${FCGIWRAP_CHILDREN:-4}
APACHE=${APACHE:-/usr/sbin/apache2}
APACHE_MODULES=${APACHE_MODULES:-/usr/lib/apache2/modules}
LIGHTTPD=${LIGHTTPD:-/usr/sbin/lighttpd}
FCGIWRAP=${FCGIWRAP:-/usr/sbin/fcgiwrap}

seconds "$DUR" >/dev/null
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a positive number"
[[ $FCGIWRAP_CHILDREN =~ ^[1-9][0-9]*$ ]] || die "FCGIWRAP_CHILDREN must be a positive number"
for c in $CASES; do
    case $c in c | sh | static) ;; *) die "unknown case '$c' in CASES (c, sh, static)" ;; esac
done
for s in $SERVERS; do
    case $s in
    flint) ;;
    apache) need "$APACHE" ;;
    lighttpd) need "$LIGHTTPD" ;;
    nginx) need "$NGINX" "$FCGIWRAP" ;;
    *) die "unknown server '$s' in SERVERS (flint, apache, lighttpd, nginx)" ;;
    esac
done
need wrk cc
need_flint
[[ $(id -u) -eq 0 ]] || die "run as root: each server is measured through a cgroup of its own"

# The cgroup hierarchy that accounts CPU: v2 (cpu.stat is in every group) or v1's cpuacct.
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    CG_ROOT=/sys/fs/cgroup
elif [[ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]]; then
    CG_ROOT=/sys/fs/cgroup/cpuacct
elif [[ -f /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage ]]; then
    CG_ROOT=/sys/fs/cgroup/cpu,cpuacct
else
    die "no cgroup hierarchy with CPU accounting (cgroup v2, or v1 cpuacct) under /sys/fs/cgroup"
fi
CGROUPS=()

# cgroup_sweep: every process left in our cgroups (programs, fcgiwrap's children) is ours: kill
# them by PID, wait for them to go (bounded), remove the groups.
cgroup_sweep() {
    local g pid i left
    for g in "${CGROUPS[@]}"; do
        [[ -d $g ]] || continue
        for ((i = 0; i < 100; i++)); do
            # (cgroup files show a size of 0: read them to know.)
            left=$(<"$g/cgroup.procs")
            [[ -n $left ]] || break
            for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
            sleep 0.05
        done
        rmdir "$g" 2>/dev/null || note "could not remove cgroup $g"
    done
}

cgi_on_exit() {
    local rc=$? pid
    trap - EXIT
    for pid in "${STARTED[@]}"; do stop_pid "$pid"; done
    cgroup_sweep
    # on_exit takes the status from $?; errexit must not end this trap on that status first.
    set +e
    (exit "$rc")
    on_exit
}

bench_init
trap cgi_on_exit EXIT
# Apache's workers run as www-data: they must reach the document root and the programs.
chmod 755 "$WORK"
records="$WORK/records.jsonl"
out_json=$(results_path cgi)
docs="$WORK/docs"
cgidir="$WORK/cgi-bin"
make_docroot "$docs"
mkdir -p "$cgidir"
cc -O2 -Wall -o "$cgidir/hello" "$BENCH_DIR/cgi/hello.c" || die "cannot build bench/cgi/hello.c"
cp "$BENCH_DIR/cgi/hello.sh" "$cgidir/hello.sh"
chmod 755 "$docs" "$cgidir" "$cgidir/hello" "$cgidir/hello.sh"

# new_cgroup NAME: a cgroup for one server; sets CG.
new_cgroup() {
    CG="$CG_ROOT/flint-bench-$$-$1"
    mkdir "$CG" || die "cannot make cgroup $CG"
    CGROUPS+=("$CG")
}

# in_cgroup: the prefix that puts the command that follows into cgroup $CG and execs it (so the
# PID start_pinned records is the server's own).
in_cgroup() {
    # shellcheck disable=SC2016 # $$, $0 and $@ are the inner shell's.
    IN_CG=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG")
}

declare -A PORT CGROUP COMMS

start_flint_cgi() { # NAME [--cgi ...]
    local name=$1
    shift
    new_cgroup "$name"
    in_cgroup
    PORT[$name]=$(free_port)
    start_pinned "$name" "${PORT[$name]}" "${IN_CG[@]}" "$FLINT" serve "$docs" \
        --listen "127.0.0.1:${PORT[$name]}" --threads 1 "$@"
    CGROUP[$name]=$CG COMMS[$name]=flint
}

start_apache() {
    local dir="$WORK/apache" m
    new_cgroup apache
    in_cgroup
    PORT[apache]=$(free_port)
    mkdir -p "$dir"
    {
        for m in mpm_event authz_core alias cgid; do
            echo "LoadModule ${m}_module $APACHE_MODULES/mod_$m.so"
        done
        cat <<EOF
ServerName 127.0.0.1
Listen 127.0.0.1:${PORT[apache]}
PidFile $dir/httpd.pid
DefaultRuntimeDir $dir
Mutex file:$dir default
ErrorLog $dir/error.log
LogLevel warn
User www-data
Group www-data
ScriptSock $dir/cgid.sock
# One worker process (its threads take all $CONNS connections at once), never replaced.
ServerLimit 1
StartServers 1
ThreadLimit 64
ThreadsPerChild 64
MaxRequestWorkers 64
MinSpareThreads 1
MaxSpareThreads 64
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
DocumentRoot $docs
<Directory />
    Require all granted
</Directory>
ScriptAlias /cgi-bin/ $cgidir/
EOF
    } >"$dir/httpd.conf"
    start_pinned apache "${PORT[apache]}" "${IN_CG[@]}" "$APACHE" -f "$dir/httpd.conf" -DFOREGROUND
    CGROUP[apache]=$CG COMMS[apache]=apache2
}

start_lighttpd() {
    local dir="$WORK/lighttpd"
    new_cgroup lighttpd
    in_cgroup
    PORT[lighttpd]=$(free_port)
    mkdir -p "$dir"
    cat >"$dir/lighttpd.conf" <<EOF
server.modules = ("mod_alias", "mod_cgi")
server.document-root = "$docs"
server.bind = "127.0.0.1"
server.port = ${PORT[lighttpd]}
server.errorlog = "$dir/error.log"
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = 30
alias.url = ("/cgi-bin/" => "$cgidir/")
\$HTTP["url"] =~ "^/cgi-bin/" { cgi.assign = ("" => "") }
EOF
    start_pinned lighttpd "${PORT[lighttpd]}" "${IN_CG[@]}" "$LIGHTTPD" -D -f "$dir/lighttpd.conf"
    CGROUP[lighttpd]=$CG COMMS[lighttpd]=lighttpd
}

# nginx speaks FastCGI, not CGI: fcgiwrap (FCGIWRAP_CHILDREN processes, each forking and
# running one program at a time) is the CGI side, in the same cgroup and on the same core.
start_nginx_fcgiwrap() {
    local dir="$WORK/nginx-cgi" sock="$WORK/nginx-cgi/fcgiwrap.sock" i
    new_cgroup nginx
    in_cgroup
    PORT[nginx]=$(free_port)
    mkdir -p "$dir"
    taskset -c "$SERVER_CPU" "${IN_CG[@]}" "$FCGIWRAP" -c "$FCGIWRAP_CHILDREN" -s "unix:$sock" \
        >"$WORK/fcgiwrap.log" 2>&1 &
    STARTED+=("$!")
    for ((i = 0; i < 300; i++)); do
        [[ -S $sock ]] && break
        kill -0 "$!" 2>/dev/null || die "fcgiwrap exited: $(tail -3 "$WORK/fcgiwrap.log")"
        sleep 0.05
    done
    [[ -S $sock ]] || die "fcgiwrap made no socket at $sock in 15 s"
    cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 30s;
    client_body_temp_path $dir/client_body;
    fastcgi_temp_path $dir/fastcgi;
    proxy_temp_path $dir/proxy;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen 127.0.0.1:${PORT[nginx]};
        root $docs;
        location ~ ^/cgi-bin/([^/]+)$ {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $cgidir/\$1;
            fastcgi_pass unix:$sock;
        }
    }
}
EOF
    start_pinned nginx-cgi "${PORT[nginx]}" "${IN_CG[@]}" "$NGINX" -p "$dir" -e "$dir/error.log" \
        -c "$dir/nginx.conf"
    CGROUP[nginx]=$CG COMMS[nginx]=nginx,fcgiwrap
}

# check_response NAME PATH: one GET must give 200 with a 1 KiB body (the program ran).
check_response() {
    local len
    len=$("${MEASURE[@]}" body-len --port "${PORT[$1]}" --path "$2") ||
        die "$1: GET $2 failed (logs in $WORK; KEEP_WORK=1 keeps them)"
    [[ $len -eq 1024 ]] || die "$1: GET $2: a body of $len bytes, expected 1024"
}

measure() { # CASE SERVER PATH ROUND TITLE
    local case=$1 server=$2 path=$3 round=$4 title=$5
    "${MEASURE[@]}" run --out "$records" --log "$WORK/load.log" --parse wrk \
        --launcher "$RUSAGE_BIN" --cpu "$CLIENT_CPU" --server-cgroup "${CGROUP[$server]}" \
        --server-comm "${COMMS[$server]}" --timeout $(($(seconds "$DUR") + 60)) \
        --label "case=$case" --label "load=wrk" --label "server=$server" \
        --label "purpose=timed" --label "round=$round" --label "title=$title" \
        -- wrk -t1 -c "$CONNS" -d "$DUR" "http://127.0.0.1:${PORT[$server]}$path"
}

# run_case CASE PATH TITLE SERVER...: a warm-up second each, then ROUNDS rounds in turn.
run_case() {
    local case=$1 path=$2 title=$3 s round
    shift 3
    note "case $case ($title)"
    for s in "$@"; do
        check_response "$s" "$path"
        taskset -c "$CLIENT_CPU" wrk -t1 -c "$CONNS" -d 1s "http://127.0.0.1:${PORT[$s]}$path" \
            >"$WORK/warm.log" 2>&1 || die "warm-up of $s failed: $(tail -5 "$WORK/warm.log")"
    done
    for ((round = 1; round <= ROUNDS; round++)); do
        for s in "$@"; do measure "$case" "$s" "$path" "$round" "$title"; done
    done
}

cgi_servers=()
if [[ " $CASES " == *" c "* || " $CASES " == *" sh "* ]]; then
    for s in $SERVERS; do
        case $s in
        flint) start_flint_cgi flint --cgi "/cgi-bin/=$cgidir" ;;
        apache) start_apache ;;
        lighttpd) start_lighttpd ;;
        nginx) start_nginx_fcgiwrap ;;
        esac
        cgi_servers+=("$s")
    done
fi
if [[ " $CASES " == *" static "* ]]; then
    [[ -n ${PORT[flint]:-} ]] || start_flint_cgi flint --cgi "/cgi-bin/=$cgidir"
    start_flint_cgi flint-nocgi
fi

echo "== CGI benchmark: $SERVERS; cases: $CASES; $DUR x $ROUNDS rounds; wrk -t1 -c $CONNS"
describe
echo "apache:  $("$APACHE" -v 2>/dev/null | sed -n 's/^Server version: //p') (event MPM, mod_cgid)"
echo "lighttpd: $("$LIGHTTPD" -v 2>/dev/null | head -1) (mod_cgi)"
echo "fcgiwrap: $FCGIWRAP_CHILDREN processes, behind nginx (fastcgi_pass over a unix socket)"
echo "cgroups: $CG_ROOT"

for case in $CASES; do
    case $case in
    c) run_case c /cgi-bin/hello "a C program, 1 KiB, keep-alive, $CONNS connections" \
        "${cgi_servers[@]}" ;;
    sh) run_case sh /cgi-bin/hello.sh "a /bin/sh script, 1 KiB, keep-alive, $CONNS connections" \
        "${cgi_servers[@]}" ;;
    static)
        # flint is the server above, with its CGI mount; flint-nocgi the same without one.
        title="a 1 KiB file, keep-alive, $CONNS connections, with and without a CGI mount"
        run_case static /1k.bin "$title" flint flint-nocgi
        ;;
    esac
done

echo
"${MEASURE[@]}" summary-cgi "$records" "${META[@]}" --meta "dur=$DUR" --meta "rounds=$ROUNDS" \
    --meta "conns=$CONNS" --meta "fcgiwrap_children=$FCGIWRAP_CHILDREN" \
    ${out_json:+--json-out "$out_json"}
