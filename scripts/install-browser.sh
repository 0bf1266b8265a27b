#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium, which the report's browser test
# (crates/report/tests/browser.rs) drives to load the generated page and take a screenshot.
#
# Idempotent and non-interactive: does nothing when `chromium` is already on PATH, and runs
# `apt-get update` only when something has to be installed. Fonts come with chromium's
# dependencies (fonts-liberation), so the screenshot shows text rather than boxes.
set -euo pipefail

SCRIPT=install-browser.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"

if command -v chromium >/dev/null 2>&1; then
    echo "install-browser.sh: chromium is already installed ($(command -v chromium))"
    exit 0
fi

require_apt
apt-get update -q
install_quietly chromium fonts-liberation

command -v chromium >/dev/null 2>&1 || die "chromium is still missing after the install"
echo "install-browser.sh: done ($(chromium --version 2>/dev/null || echo chromium))"
