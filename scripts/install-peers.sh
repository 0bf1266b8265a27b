#!/usr/bin/env bash
# Installs the peer servers and tracers `flint lab` uses (docs/lab.md), on Debian bookworm (or
# later), as root: nginx, apache2 (prefork and event MPMs, mod_http2), lighttpd, h2o, strace,
# php-fpm, php-cgi, mod_php (libapache2-mod-php) and their PDO drivers for SQLite and
# PostgreSQL, fcgiwrap (the FastCGI
# applications of flint serve's tests and flint lab dynamic), postgresql (the database
# server of `flint lab dynamic --db postgres`), caddy (a peer of flint lab dynamic, and the HTTP/3
# server of crates/http3's tests),
# haproxy (a reverse proxy peer of bench/proxy.sh), and linux-perf when the archive has it.
#
# Idempotent and non-interactive: installs only what is missing, and runs `apt-get update` once,
# only if something is. `flint lab` runs each server with its own config on its own loopback port,
# so the distributions' services must not run: a policy-rc.d that forbids starting services is in
# place during the install (there may be no systemd to ask), and any service a package started
# anyway is stopped afterwards (only a process whose name says it is that server).
set -euo pipefail

SCRIPT=install-peers.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"
require_apt

missing=()
[[ -x /usr/sbin/nginx ]] || missing+=(nginx)
[[ -x /usr/sbin/apache2 ]] || missing+=(apache2)
[[ -x /usr/sbin/lighttpd ]] || missing+=(lighttpd)
# lighttpd's TLS module (flint lab tls); a separate package since bookworm.
[[ -e /usr/lib/lighttpd/mod_openssl.so ]] || missing+=(lighttpd-mod-openssl)
# h2o: the HTTP/2-first peer of the page experiment (flint lab syscalls).
[[ -x /usr/bin/h2o ]] || missing+=(h2o)
# fcgiwrap: nginx's way to run CGI programs (bench/cgi.sh).
[[ -x /usr/sbin/fcgiwrap ]] || missing+=(fcgiwrap)
installed strace || missing+=(strace)
# FastCGI applications flint serve's gateway tests run (tests/gateway_fastcgi*.rs).
compgen -G '/usr/sbin/php-fpm*' >/dev/null || missing+=(php-fpm)
# php-cgi: PHP run as a CGI program, a process per request (tests/it/gateway_cgi.rs).
[[ -x /usr/bin/php-cgi ]] || missing+=(php-cgi)
[[ -x /usr/sbin/fcgiwrap ]] || missing+=(fcgiwrap)
# mod_php: PHP inside Apache prefork's children (the `mod-php` deployment of flint lab dynamic,
# loaded by the lab's own httpd.conf). Its postinst switches Debian's own apache2 config to the
# prefork MPM and enables php8.x there (a2dismod/a2enmod under /etc/apache2): the lab never reads
# that config (it writes its own and loads every module explicitly, the MPM included), and the
# service the postinst would restart is forbidden to start and stopped below as before.
compgen -G '/usr/lib/apache2/modules/libphp*.so' >/dev/null || missing+=(libapache2-mod-php)
# PDO's SQLite and PostgreSQL drivers: the PHP application of `flint lab dynamic` (its php-fpm,
# php-cgi and mod-php deployments) reads the same database as flint-app, through PDO.
compgen -G '/usr/lib/php/*/pdo_sqlite.so' >/dev/null || missing+=(php-sqlite3)
compgen -G '/usr/lib/php/*/pdo_pgsql.so' >/dev/null || missing+=(php-pgsql)
# PostgreSQL: the database server of `flint lab dynamic --db postgres`, which makes and starts
# its own cluster (initdb, postgres, pg_isready) in a temporary directory. Debian's package starts
# a cluster of its own: stopped below as the other services are.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing+=(postgresql)
# util-linux: setpriv, which drops PostgreSQL to nobody when the lab is root.
installed util-linux || missing+=(util-linux)
# HAProxy: the reverse proxy peer of flint serve's proxy (bench/proxy.sh).
[[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
# Caddy: a peer of flint lab dynamic (php_fastcgi, reverse_proxy), and with HTTP/3 on by
# default the real peer of crates/http3's client (tests/caddy.rs).
[[ -x /usr/bin/caddy ]] || missing+=(caddy)
perf_wanted=""
command -v perf >/dev/null 2>&1 || perf_wanted=yes

if [[ ${#missing[@]} -eq 0 && -z $perf_wanted ]]; then
    echo "install-peers.sh: everything is already installed"
    exit 0
fi

apt-get update -q

resolved=()
for pkg in "${missing[@]}"; do
    case $pkg in
    # bookworm: `nginx` has /usr/sbin/nginx (nginx-light is transitional); older: nginx-light.
    nginx) resolved+=("$(pick nginx nginx-light)") || die "no nginx package in the apt sources" ;;
    *) resolved+=("$pkg") ;;
    esac
done
if [[ -n $perf_wanted ]]; then
    # perf is optional (strace is the fallback): linux-perf on Debian, linux-tools elsewhere.
    if perf_pkg=$(pick linux-perf linux-tools-generic); then
        resolved+=("$perf_pkg")
    else
        echo "install-peers.sh: no perf package in the apt sources; flint lab will use strace"
    fi
fi

if [[ ${#resolved[@]} -gt 0 ]]; then
    install_quietly "${resolved[@]}"
fi
stop_service nginx nginx /run/nginx.pid
stop_service apache2 apache2 /run/apache2/apache2.pid
stop_service lighttpd lighttpd /run/lighttpd.pid
stop_service h2o h2o /run/h2o.pid
for pidfile in /run/php/php*-fpm.pid; do
    [[ -e $pidfile ]] || continue
    fpm=$(basename "$pidfile" .pid) # php8.2-fpm: its process is php-fpm8.2
    version=${fpm#php}
    stop_service "$fpm" "php-fpm${version%-fpm}" "$pidfile"
done
stop_service fcgiwrap fcgiwrap /run/fcgiwrap.pid
# Caddy's service keeps no pid file: only systemd's unit, if any, is stopped and disabled.
stop_service caddy caddy /run/caddy.pid
stop_service haproxy haproxy /run/haproxy.pid
for pidfile in /run/postgresql/*.pid; do # Debian's cluster: 15-main.pid, its postmaster's
    [[ -e $pidfile ]] || continue
    stop_service postgresql postgres "$pidfile"
done

for cmd in /usr/sbin/nginx /usr/sbin/apache2 /usr/sbin/lighttpd /usr/bin/h2o /usr/sbin/fcgiwrap /usr/bin/caddy /usr/sbin/haproxy strace taskset; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after the install"
done
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || die "postgres is still missing after the install"
command -v setpriv >/dev/null 2>&1 || die "setpriv is still missing after the install"
for module in mpm_prefork mpm_event mime dir authz_core http2; do
    [[ -f /usr/lib/apache2/modules/mod_$module.so ]] || die "apache2 module mod_$module.so is missing"
done
compgen -G '/usr/lib/apache2/modules/libphp*.so' >/dev/null || die "mod_php (libphp*.so) is still missing after the install"
echo "install-peers.sh: done"
