#!/usr/bin/env bash
# Installs the third-party sites `flint discover` is held to a browser on
# (crates/flint/tests/it/discover_sites.rs), as root, small ones only:
#
# - a Sphinx manual from a Debian doc package: python-cbor2-doc (cbor2's manual, Sphinx with the
#   Read the Docs theme: Lato and Roboto Slab web fonts, Font Awesome 4; its _static files are
#   symlinks into sphinx-rtd-theme-common, fonts-lato, fonts-font-awesome and libjs-sphinxdoc);
# - a Bootstrap theme with Font Awesome from npm: Start Bootstrap's SB Admin 2 (Bootstrap 4,
#   Font Awesome Free 5, jQuery, Chart.js, DataTables; its built pages and vendor/ as
#   published), unpacked under /usr/local/share/flint/sites/sb-admin-2 (FLINT_SITES overrides
#   /usr/local/share/flint/sites, as it does for the test);
# - a script-heavy site's generator: MkDocs with the Material theme (Debian's mkdocs and
#   mkdocs-material 8.2; 25 packages with --no-install-recommends, about 7 MB to download and
#   33 MB installed), which the test runs on its own small project to build the site.
#
# Idempotent and non-interactive: does nothing for a site already there, and runs
# `apt-get update` only when a package has to be installed.
set -euo pipefail

SCRIPT=install-sites.sh
# shellcheck source=scripts/apt.sh
source "$(dirname "$0")/apt.sh"

SITES=${FLINT_SITES:-/usr/local/share/flint/sites}
SB_ADMIN=startbootstrap-sb-admin-2@4.1.4

if [[ -e /usr/share/doc/python-cbor2-doc/html/index.html ]]; then
    echo "$SCRIPT: the Sphinx manual is already installed (python-cbor2-doc)"
else
    require_apt
    apt-get update -q
    install_quietly python-cbor2-doc
fi

if command -v mkdocs >/dev/null 2>&1 && [[ -f /usr/share/mkdocs/themes/material/mkdocs_theme.yml ]]; then
    echo "$SCRIPT: MkDocs and its Material theme are already installed"
else
    require_apt
    apt-get update -q
    install_quietly mkdocs mkdocs-material
fi

if [[ -e $SITES/sb-admin-2/index.html ]]; then
    echo "$SCRIPT: SB Admin 2 is already in $SITES/sb-admin-2"
else
    if ! command -v npm >/dev/null 2>&1; then
        require_apt
        apt-get update -q
        install_quietly npm
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "$SB_ADMIN" >/dev/null) || die "npm pack $SB_ADMIN failed"
    mkdir -p "$tmp/unpacked"
    tar xzf "$tmp"/startbootstrap-sb-admin-2-*.tgz -C "$tmp/unpacked"
    # What the pages load: the HTML, css/, js/, img/ and vendor/ (not the sources).
    mkdir -p "$SITES/sb-admin-2"
    # Font Awesome's SVGs, sprites, metadata and JavaScript build, and Bootstrap's SCSS, are
    # named by no page: left out (22 MB of the 23).
    (cd "$tmp/unpacked/package/vendor" &&
        rm -rf fontawesome-free/svgs fontawesome-free/sprites fontawesome-free/metadata \
            fontawesome-free/js fontawesome-free/less fontawesome-free/scss bootstrap/scss)
    (cd "$tmp/unpacked/package" && cp -r ./*.html css js img vendor "$SITES/sb-admin-2/")
    echo "$SCRIPT: SB Admin 2 unpacked in $SITES/sb-admin-2"
fi
