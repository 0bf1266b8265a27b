#!/usr/bin/env bash
# Installs h2spec (the HTTP/2 conformance suite the serve tests run against `flint serve`, over
# h2c and TLS) into /usr/local/bin, built with Go; Go comes from Debian's golang-go when no `go`
# is on the PATH. Idempotent: does nothing when h2spec is already there.
set -euo pipefail

SCRIPT=install-h2spec.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"

if command -v h2spec >/dev/null 2>&1; then
    echo "install-h2spec.sh: h2spec is already installed ($(command -v h2spec))"
    exit 0
fi

go=$(command -v go || true)
[[ -n $go || ! -x /usr/local/go/bin/go ]] || go=/usr/local/go/bin/go
if [[ -z $go ]]; then
    require_apt
    apt-get update -q
    install_quietly golang-go
    go=$(command -v go) || die "go is still missing after installing golang-go"
fi

[[ $(id -u) -eq 0 ]] || die "run as root (h2spec goes to /usr/local/bin)"
echo "install-h2spec.sh: building h2spec with $($go version)"
GOBIN=/usr/local/bin GOFLAGS=-mod=mod "$go" install github.com/summerwind/h2spec/cmd/h2spec@latest
command -v h2spec >/dev/null 2>&1 || die "h2spec is still missing after go install"
echo "install-h2spec.sh: done ($(h2spec --version 2>&1 | head -n1))"
