#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium, which the report's browser test
# (crates/report/tests/browser.rs) drives to load the generated page and take a screenshot.
#
# Idempotent and non-interactive: does nothing when `chromium` is already on PATH, and runs
# `apt-get update` only when something has to be installed. Fonts come with chromium's
# dependencies (fonts-liberation), so the screenshot shows text rather than boxes.
set -euo pipefail

die() {
    echo "install-browser.sh: error: $*" >&2
    exit 1
}

if command -v chromium >/dev/null 2>&1; then
    echo "install-browser.sh: chromium is already installed ($(command -v chromium))"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || die "run as root (apt-get install needs it)"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script is for Debian"
export DEBIAN_FRONTEND=noninteractive

apt-get update -q
echo "install-browser.sh: installing chromium"
apt-get install -y -q --no-install-recommends chromium fonts-liberation

command -v chromium >/dev/null 2>&1 || die "chromium is still missing after the install"
echo "install-browser.sh: done ($(chromium --version 2>/dev/null || echo chromium))"
