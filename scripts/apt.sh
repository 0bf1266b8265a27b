# shellcheck shell=bash
# Shared by the install-*.sh scripts (sourced, not run): apt-get installs that are idempotent,
# non-interactive, and never leave a distribution's service running. flint runs every server
# with its own config on its own loopback port; a packaged nginx or Apache started on :80 by
# the install would only get in the way. Set SCRIPT to the sourcing script's name first.

die() {
    echo "$SCRIPT: error: $*" >&2
    exit 1
}

# Root and apt-get, or a clear reason why not.
require_apt() {
    [[ $(id -u) -eq 0 ]] || die "run as root (apt-get install needs it)"
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script is for Debian"
    export DEBIAN_FRONTEND=noninteractive
}

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# The first of the named packages this archive has (names differ between releases).
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

# apt-get install with service starts forbidden (invoke-rc.d asks policy-rc.d; 101 = not
# allowed: there may be no systemd to ask). An existing policy-rc.d is put back afterwards.
install_quietly() {
    local policy=/usr/sbin/policy-rc.d saved="" rc=0
    if [[ -e $policy ]]; then
        saved=$(mktemp /usr/sbin/.policy-rc.d.saved.XXXXXX)
        cp -p "$policy" "$saved"
    fi
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    echo "$SCRIPT: installing $*"
    apt-get install -y -q --no-install-recommends "$@" || rc=$?
    if [[ -n $saved ]]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
    return "$rc"
}

# Stops a service a package started regardless: the pid in its pidfile, only if that process
# is the named server (comm), then systemd's unit where systemd runs.
stop_service() {
    local name=$1 comm=$2 pidfile=$3 pid i
    if [[ -s $pidfile ]]; then
        pid=$(cat "$pidfile")
        if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]]; then
            echo "$SCRIPT: stopping the $name service the package started (pid $pid)"
            kill -TERM "$pid" || true
            for ((i = 0; i < 100; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
        systemctl disable --now "$name" >/dev/null 2>&1 || true
    fi
}
