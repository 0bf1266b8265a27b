#!/usr/bin/env bash
# Installs what flint's benchmarks and tests need on Debian bookworm (or later), as root:
# nginx, wrk, h2load (nghttp2-client, for bench/tls-client.sh), strace, gcc, python3, util-linux
# (taskset), procps, iproute2 (the many-hosts namespace test, the lab's network path), tcpdump
# (the lab's packet counts held against it), openssh-server and openssh-client
# (the many-hosts tests start their own sshd on a loopback port; the packaged service is never
# started), apache2-utils (`htpasswd`: serve's authentication tests make their files with it,
# bench/auth.sh too), curl (bench/auth.sh's first checks), and what building BoringSSL for
# crates/http3 (quiche) takes: cmake, g++ and libclang with its headers (bindgen makes its Rust
# bindings).
#
# Idempotent and non-interactive: installs only what is missing, and runs `apt-get update` once,
# only if something is. The benchmarks run nginx with their own config on their own ports, so
# the distribution's nginx service must not be started: a policy-rc.d that forbids starting
# services is put in place for the install (there may be no systemd to ask), and an nginx the
# package started anyway is stopped.
set -euo pipefail

SCRIPT=install-deps.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"
require_apt

missing=()
for pkg in wrk nghttp2-client strace gcc python3 util-linux procps iproute2 tcpdump openssh-server \
    openssh-client apache2-utils curl cmake g++ libclang-dev; do
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
    nginx_pkg=$(pick nginx nginx-light) || nginx_pkg=""
    [[ -n $nginx_pkg ]] || die "neither nginx nor nginx-light is in the apt sources"
    missing+=("$nginx_pkg")
fi

install_quietly "${missing[@]}"
[[ -z $nginx_pkg ]] || stop_service nginx nginx /run/nginx.pid
if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
    stop_service ssh sshd /run/sshd.pid
fi

for cmd in /usr/sbin/nginx wrk h2load strace gcc python3 taskset ps ip /usr/sbin/sshd ssh ssh-keygen \
    htpasswd curl cmake g++; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after the install"
done
echo "install-deps.sh: done"
