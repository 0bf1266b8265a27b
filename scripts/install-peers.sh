#!/usr/bin/env bash
# Installs the peer servers and tracers `flint lab` uses (docs/lab.md), on Debian bookworm (or
# later), as root: nginx, apache2 (prefork and event MPMs), lighttpd, strace, and linux-perf when
# the archive has it.
#
# Idempotent and non-interactive: installs only what is missing, and runs `apt-get update` once,
# only if something is. `flint lab` runs each server with its own config on its own loopback port,
# so the distributions' services must not run: a policy-rc.d that forbids starting services is in
# place during the install (there may be no systemd to ask), and any service a package started
# anyway is stopped afterwards (only a process whose name says it is that server).
set -euo pipefail

die() {
    echo "install-peers.sh: error: $*" >&2
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "run as root (apt-get install needs it)"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script is for Debian"
export DEBIAN_FRONTEND=noninteractive

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
[[ -x /usr/sbin/nginx ]] || missing+=(nginx)
[[ -x /usr/sbin/apache2 ]] || missing+=(apache2)
[[ -x /usr/sbin/lighttpd ]] || missing+=(lighttpd)
installed strace || missing+=(strace)
installed util-linux || missing+=(util-linux)
perf_wanted=""
command -v perf >/dev/null 2>&1 || perf_wanted=yes

if [[ ${#missing[@]} -eq 0 && -z $perf_wanted ]]; then
    echo "install-peers.sh: everything is already installed"
    exit 0
fi

apt-get update -q

# The package names differ between releases: take the first this archive has.
pick() {
    local candidate
    for candidate in "$@"; do
        if apt-cache show "$candidate" >/dev/null 2>&1; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
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

# Forbid service starts during the install (invoke-rc.d asks policy-rc.d; 101 = not allowed).
# An existing policy-rc.d is set aside and put back afterwards.
policy=/usr/sbin/policy-rc.d
saved=""
if [[ -e $policy ]]; then
    saved=$(mktemp /usr/sbin/.policy-rc.d.saved.XXXXXX)
    cp -p "$policy" "$saved"
fi
restore_policy() {
    if [[ -n $saved ]]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy"
chmod 755 "$policy"

if [[ ${#resolved[@]} -gt 0 ]]; then
    echo "install-peers.sh: installing ${resolved[*]}"
    apt-get install -y -q --no-install-recommends "${resolved[@]}"
fi

# Stops the service a package may have started regardless: the pid in its pidfile, only if that
# process is the named server.
stop_service() {
    local name=$1 comm=$2 pidfile=$3 pid i
    [[ -s $pidfile ]] || return 0
    pid=$(cat "$pidfile")
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 0
    echo "install-peers.sh: stopping the $name service the package started (pid $pid)"
    kill -TERM "$pid" || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}
stop_service nginx nginx /run/nginx.pid
stop_service apache2 apache2 /run/apache2/apache2.pid
stop_service lighttpd lighttpd /run/lighttpd.pid
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    systemctl disable --now nginx apache2 lighttpd >/dev/null 2>&1 || true
fi

for cmd in /usr/sbin/nginx /usr/sbin/apache2 /usr/sbin/lighttpd strace taskset; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after the install"
done
for module in mpm_prefork mpm_event mime dir authz_core; do
    [[ -f /usr/lib/apache2/modules/mod_$module.so ]] || die "apache2 module mod_$module.so is missing"
done
echo "install-peers.sh: done"
