#!/usr/bin/env bash
# Installs oha, a third-party HTTP load generator, built with its HTTP/3 client (the `http3`
# feature: h3 over quinn), into /usr/local/bin: serve's tests hold flint serve's HTTP/3 to it
# (crates/serve/tests/it/h3_oha.rs) and bench/h3.sh compares flint bench's client CPU with it.
# Built from crates.io with cargo (minutes of compiling). Idempotent: does nothing when an oha
# that takes `--http-version 3` is already there; one built without HTTP/3 is replaced.
set -euo pipefail

SCRIPT=install-oha.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"

# The version whose `http3` feature this was checked with; cargo's lock file of the release
# (--locked) pins its dependencies.
OHA_VERSION=${OHA_VERSION:-1.16.0}
PREFIX=${PREFIX:-/usr/local}

# oha parses --http-version before it connects anywhere: one built without the feature says so.
oha_speaks_h3() {
    local said
    said=$(timeout 10 "$1" --no-tui -n 1 --http-version 3 https://127.0.0.1:9/ 2>&1 || true)
    [[ $said != *"not been built with HTTP/3"* ]] && "$1" --version >/dev/null 2>&1
}

oha=$(command -v oha || true)
if [[ -n $oha ]] && oha_speaks_h3 "$oha"; then
    echo "install-oha.sh: oha with HTTP/3 is already installed ($oha)"
    exit 0
fi

cargo=$(command -v cargo || true)
[[ -n $cargo || ! -x $HOME/.cargo/bin/cargo ]] || cargo=$HOME/.cargo/bin/cargo
[[ -n $cargo ]] || die "cargo is missing (install Rust with rustup first)"
[[ -w $PREFIX/bin ]] || die "$PREFIX/bin is not writable (run as root, or set PREFIX)"

echo "install-oha.sh: building oha $OHA_VERSION with HTTP/3 ($($cargo --version))"
target=$(mktemp -d /tmp/oha-build.XXXXXX)
trap 'rm -rf "$target"' EXIT
CARGO_TARGET_DIR=$target "$cargo" install oha --version "$OHA_VERSION" --locked \
    --features http3 --force --root "$PREFIX"
oha_speaks_h3 "$PREFIX/bin/oha" || die "$PREFIX/bin/oha still does not take --http-version 3"
echo "install-oha.sh: done ($("$PREFIX/bin/oha" --version 2>&1 | head -n1))"
