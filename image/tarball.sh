#!/usr/bin/env bash
# Reproducible appliance artifact: the same commit always gives the same bytes.
#
#   image/tarball.sh [REV]    → dist/ipamd-appliance-<rev>.tar.gz and its .sha256 (`make tarball`)
#
# The tarball is `git archive` of REV (default HEAD): file order, owners and mtimes come from
# the commit, not from this machine; gzip runs without a name or timestamp (-n). Everything the
# appliance installs at boot is pinned by hash (requirements*.lock), so the tarball plus the
# Debian release fully determine what runs. The appliance image (`make image`,
# image/build.sh) is built from the same git archive.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-HEAD}"
commit=$(git rev-parse --verify "$rev^{commit}")
short=$(git rev-parse --short=12 "$commit")
mkdir -p dist
out="dist/ipamd-appliance-$short.tar.gz"
git archive --format=tar --prefix="ipamd/" "$commit" | gzip -n -9 > "$out.tmp"
mv "$out.tmp" "$out"
(cd dist && sha256sum "$(basename "$out")" > "$(basename "$out").sha256")
echo "$out"
