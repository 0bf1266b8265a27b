#!/usr/bin/env bash
# Installs what flint's benchmarks and tests need on Debian bookworm (or later), as root:
# nginx, wrk, strace, gcc, python3, util-linux (taskset), procps.
#
# Idempotent and non-interactive: installs only what is missing, and runs `apt-get update` once,
# only if something is. The benchmarks run nginx with their own config on their own ports, so
# the distribution's nginx service must not be started: a policy-rc.d that forbids starting
# services is put in place for the install (there may be no systemd to ask), and an nginx the
# package started anyway is stopped.
set -euo pipefail

die() {
    echo "install-deps.sh: error: $*" >&2
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "run as root (apt-get install needs it)"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script is for Debian"
export DEBIAN_FRONTEND=noninteractive

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for pkg in wrk strace gcc python3 util-linux procps; do
    installed "$pkg" || missing+=("$pkg")
done
nginx_pkg=""
[[ -x /usr/sbin/nginx ]] || nginx_pkg=needed

if [[ ${#missing[@]} -eq 0 && -z $nginx_pkg ]]; then
    echo "install-deps.sh: everything is already installed"
    exit 0
fi

apt-get update -q

if [[ -n $nginx_pkg ]]; then
    # bookworm: `nginx` has /usr/sbin/nginx (nginx-light became a transitional package);
    # older releases: nginx-light is the small build. Take whichever this archive has.
    nginx_pkg=""
    for candidate in nginx nginx-light; do
        if apt-cache show "$candidate" >/dev/null 2>&1; then
            nginx_pkg=$candidate
            break
        fi
    done
    [[ -n $nginx_pkg ]] || die "neither nginx nor nginx-light is in the apt sources"
    missing+=("$nginx_pkg")
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

echo "install-deps.sh: installing ${missing[*]}"
apt-get install -y -q --no-install-recommends "${missing[@]}"

if [[ -n $nginx_pkg ]]; then
    # If the package started its service regardless, stop it: only the one we just installed.
    pidfile=/run/nginx.pid
    if [[ -s $pidfile ]]; then
        pid=$(cat "$pidfile")
        if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == nginx ]]; then
            echo "install-deps.sh: stopping the nginx service the package started (pid $pid)"
            kill -QUIT "$pid" || true
            for ((i = 0; i < 100; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        fi
    fi
    if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
        systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
fi

for cmd in /usr/sbin/nginx wrk strace gcc python3 taskset ps; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after the install"
done
echo "install-deps.sh: done"
