#!/usr/bin/env bash
# `make image`: the appliance image, the same bytes for the same commit and the same packages.
#
#   image/build.sh            → build/image/: ipamd-<ver>-oci.tar (podman/docker load),
#                               ipamd-<ver>-disk.raw (the VM disk: image/vmdisk.sh),
#                               packages.lock (the Debian set used), SHA256SUMS,
#                               debs/ (the build's inputs: every .deb installed, with hashes)
#   FROM=build/image/debs image/build.sh
#                             → the same image again from a build's recorded inputs only
#                               (a directory like debs/ or a tarball of it): no Debian mirror
#   LOCK=file image/build.sh  → exactly the versions of a packages.lock from the mirror, or
#                               one line naming the first one the mirror no longer has
#
# One root file system makes both: the container is the tree without the kernel (/boot,
# /usr/lib/modules); the VM disk is the whole tree on ext4 behind a syslinux boot partition.
#
# Inputs: this commit's tree (git archive HEAD; uncommitted changes are not in the image), the
# Debian 12 packages named in image/packages.txt as the mirror has them today (Debian's mirror
# keeps only current versions, so no lock is committed: each build records the exact set it
# used in packages.lock and the .deb files themselves in debs/, which rebuild it with FROM=),
# the Python environment from requirements.lock (hashes). The build host's own registry
# settings (apt sources, pip configuration, certificates) are used for the build only: bound
# into the tree while pip runs, never copied into the image.
# SOURCE_DATE_EPOCH is the commit's time; every file time is clamped to it.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
die() { echo "image/build.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap --mode=root, chroot, bind mounts)"
command -v mmdebstrap >/dev/null || die "mmdebstrap missing: make system-image"

commit=$(git rev-parse --verify 'HEAD^{commit}')
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct "$commit")}
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' src/ipamd/__init__.py)
tag="$version-$(git rev-parse --short=12 "$commit")"
out=${IMAGE_OUT:-$here/build/image}
work=${IMAGE_WORK:-$here/build/image-work}
sources=${IMAGE_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
from=${FROM:-} lock=${LOCK:-}
[ -z "$from" ] || [ -z "$lock" ] || die "FROM= and LOCK= exclude each other (FROM has its lock)"
[ -n "$from" ] || [ -r "$sources" ] || die "no apt sources at $sources (set IMAGE_APT_SOURCES)"
export LC_ALL=C.UTF-8 TZ=UTC
umask 022
rm -rf "$work"
mkdir -p "$work"
if [ -n "$from" ]; then
  # Copied first: FROM may be inside $out (build/image/debs), which is made anew below.
  image/inputs.sh load "$from" "$work/from" "$commit" || die "FROM=$from: not usable (above)"
fi
if [ -n "$lock" ]; then
  cp "$lock" "$work/lock" || die "LOCK=$lock: cannot read it"
  # Exactly a lock's versions (the whole closure): first a one-line check that the mirror
  # still has every one of them (image/lockcheck.py), not mmdebstrap's page of pins; before
  # anything is built or the last build's output removed.
  python3 image/lockcheck.py --sources "$sources" --refresh "make image (without LOCK=)" \
    "$lock" || exit 1
fi
rm -rf "$out"
mkdir -p "$out"

git archive --format=tar --prefix=ipamd/ "$commit" > "$work/src.tar"
git show "$commit:image/rootfs/etc/postgresql-common/createcluster.conf" > "$work/createcluster.conf"
# Before the kernel's postinst makes the first initramfs: gzip, no resume device.
git show "$commit:image/rootfs/etc/initramfs-tools/conf.d/ipamd" > "$work/initramfs.conf"

# The DHCP hot path compiled by mypyc (docs/DEVELOPING.md) from this commit's sources: mypy
# from requirements-build.lock (hashes) in a build-only venv, the host's gcc. The venv's
# python3 is Debian 12's, as the image's, so the modules fit it; ipamd checks the ABI tag and
# every source's hash at start and runs the modules as Python otherwise. Two builds give the
# same bytes (no debug information, relative paths). Nothing of this venv enters the image.
mkdir -p "$work/compile"
tar -C "$work/compile" -xf "$work/src.tar"
/usr/bin/python3 -m venv "$work/compile-venv"
"$work/compile-venv/bin/pip" install --quiet --no-cache-dir --require-hashes \
  -r "$work/compile/ipamd/requirements-build.lock"
(cd "$work/compile/ipamd" && PYTHONPATH=src "$work/compile-venv/bin/python" -c \
  'import sys; from ipamd.dhcp.compiled import main; sys.exit(main())') >/dev/null \
  || die "compiling the DHCP hot path failed"

names() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$@"; }
# The names, as the commit has them: apt resolves them (and their dependencies) against the
# mirror; from FROM's local repository (only the recorded versions) it resolves the same set.
include=$(git show "$commit:image/packages.txt" | names | tr '\n' ',')
mirror=("$sources")
hooks=(--skip=essential/unlink  # the essential .debs stay in the cache: debs/ keeps them
       --customize-hook="$here/image/inputs.sh record \"\$1\" $out/debs")
if [ -n "$lock" ]; then
  include=$(names "$work/lock" | tr '\n' ',')  # checked above
elif [ -n "$from" ]; then
  # The recorded .debs as a local repository, bound at the same path inside the tree (apt
  # runs inside it for all but the essential set); no other source is given to mmdebstrap.
  repo=$work/from
  mirror=("deb [trusted=yes] file://$repo ./")
  hooks=(--setup-hook="$here/image/inputs.sh mount \"\$1\" $repo"
         --customize-hook="$here/image/inputs.sh unmount \"\$1\" $repo")
fi

# The host's pip settings, bound read-only into the tree while pip runs.
image/pip-paths.sh > "$work/pip-paths"
env | grep '^PIP_' > "$work/pip-env" || true

rootfs="$work/rootfs"
mmdebstrap --mode=root --variant=apt --format=directory \
  --include="$include" \
  --dpkgopt=force-confold --dpkgopt=force-confdef "${hooks[@]}" \
  --setup-hook='mkdir -p "$1/etc/postgresql-common"' \
  --setup-hook="cp $work/createcluster.conf \"\$1/etc/postgresql-common/\"" \
  --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d"' \
  --setup-hook="cp $work/initramfs.conf \"\$1/etc/initramfs-tools/conf.d/ipamd\"" \
  --customize-hook="$here/image/customize.sh \"\$1\" $work" \
  bookworm "$rootfs" "${mirror[@]}"

chroot "$rootfs" dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort > "$out/packages.lock"
expected=${lock:+$work/lock}
expected=${expected:-${from:+$work/from/packages.lock}}
if [ -n "$expected" ] && ! cmp -s <(names "$expected" | LC_ALL=C sort) "$out/packages.lock"; then
  diff <(names "$expected" | LC_ALL=C sort) "$out/packages.lock" >&2 || true
  die "the installed set differs from ${lock:-$from/packages.lock}"
fi
if [ -n "$from" ]; then
  image/inputs.sh copy "$work/from" "$out/debs"  # the same inputs, beside the same image
fi
# Every installed package's .deb is in debs/ (and nothing else), hashed: the inputs are whole.
image/inputs.sh seal "$out/debs" "$out/packages.lock" "$commit" || die "debs/ is not the installed set"

chmod 0755 "$rootfs"  # made under the build's umask; / of the image is 0755
find "$rootfs" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"
# A directory's time is that of the last package that unpacked or added to it: it follows the
# order apt installs in, which follows the order of the package indexes (the mirror's or FROM's
# local repository's), not the packages. Every directory gets the epoch: the same tree either way.
find "$rootfs" -type d -print0 | xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"
tar_rootfs() {  # $1 = output; further args = --exclude patterns
  local target=$1; shift
  tar "$@" --sort=name --format=pax --numeric-owner --owner=0 --group=0 \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -C "$rootfs" -cf "$target" .
}
# The container: no kernel, no modules, no boot loader files (a container has no use for them).
tar_rootfs "$work/container.tar" --exclude='./boot/*' --exclude='./usr/lib/modules/*' \
  --exclude='./vmlinuz*' --exclude='./initrd.img*'
python3 image/oci.py "$work/container.tar" "$out/ipamd-$tag-oci.tar" \
  --name "localhost/ipamd:$tag" --revision "$commit"
rm -f "$work/container.tar"
# The VM disk: the whole tree (image/vmdisk.sh; ids from the commit).
image/vmdisk.sh "$rootfs" "$out/ipamd-$tag-disk.raw" "$commit"

(cd "$out" && sha256sum -- *.tar *.raw packages.lock > SHA256SUMS)
rm -rf "$work"
cat "$out/SHA256SUMS"
echo "image/build.sh: inputs in $out/debs ($(find "$out/debs" -name '*.deb' | wc -l) .debs);" \
     "rebuild with: make image FROM=<a copy of that directory>" >&2
