#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium, which the report's browser test
# (crates/report/tests/browser.rs) drives to load the generated page and take a screenshot.
#
# Idempotent and non-interactive: does nothing when `chromium` is already on PATH, and runs
# `apt-get update` only when something has to be installed. Fonts come with chromium's
# dependencies (fonts-liberation), so the screenshot shows text rather than boxes; DejaVu
# (fonts-dejavu-core) is a real font the discover tests serve to Chromium as a web font.
set -euo pipefail

SCRIPT=install-browser.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"

DEJAVU=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
if command -v chromium >/dev/null 2>&1 && [[ -f $DEJAVU ]]; then
    echo "install-browser.sh: chromium is already installed ($(command -v chromium)), and DejaVu"
    exit 0
fi

require_apt
apt-get update -q
install_quietly chromium fonts-liberation fonts-dejavu-core
[[ -f $DEJAVU ]] || die "$DEJAVU is still missing after the install"

command -v chromium >/dev/null 2>&1 || die "chromium is still missing after the install"
echo "install-browser.sh: done ($(chromium --version 2>/dev/null || echo chromium))"
