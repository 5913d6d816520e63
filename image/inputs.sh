#!/usr/bin/env bash
# A build's recorded inputs (image/build.sh): every .deb the image installed, with hashes, so
# the same image can be built again when Debian's mirror no longer has those versions (it keeps
# only current ones). Debian's reproducible builds do the same with a .buildinfo and
# snapshot.debian.org; this host reaches only the current mirror, so the build keeps the files.
#
# The archive (build/image/debs/, or a tarball of that directory):
#   *.deb             the exact packages installed (apt's own file names)
#   packages.lock     Package=Version of each, as dpkg lists them in the image
#   apt-sources.tar   the image's own /etc/apt/sources.list* (the mirror it was built from)
#   build-info        commit=<the commit built>
#   SHA256SUMS        of every file above
#
#   image/inputs.sh record ROOT DEST         customize hook: the tree's cached .debs → DEST
#   image/inputs.sh seal DEST LOCK COMMIT    DEST holds exactly LOCK's packages; hash it all
#   image/inputs.sh load SRC DEST COMMIT     FROM= (directory or tarball) → a checked local
#                                            apt repository in DEST
#   image/inputs.sh mount ROOT REPO          setup hook: REPO at the same path in the tree
#   image/inputs.sh unmount ROOT REPO        customize hook: gone again, leaving no trace;
#                                            the recorded apt sources back in place
#   image/inputs.sh copy SRC DEST            the loaded archive's files again (no index)
set -euo pipefail
die() { echo "image/inputs.sh: $*" >&2; exit 1; }
FILES=(packages.lock apt-sources.tar build-info)

# Package=Version of every .deb in $1, sorted (the form of packages.lock).
deb_set() {
  local deb
  for deb in "$1"/*.deb; do
    [ -f "$deb" ] || continue
    dpkg-deb --show --showformat='${Package}=${Version}\n' "$deb"
  done | LC_ALL=C sort
}

record() {
  local root=$1 dest=$2 sources=()
  mkdir -p "$dest"
  cp -- "$root"/var/cache/apt/archives/*.deb "$dest/"
  [ -e "$root/etc/apt/sources.list" ] && sources+=(etc/apt/sources.list)
  [ -d "$root/etc/apt/sources.list.d" ] && sources+=(etc/apt/sources.list.d)
  tar -C "$root" --sort=name --numeric-owner --mtime=@"${SOURCE_DATE_EPOCH:?}" \
    -cf "$dest/apt-sources.tar" "${sources[@]}"
}

seal() {
  local dest=$1 lock=$2 commit=$3
  if ! cmp -s <(deb_set "$dest") <(grep -v '^#' "$lock" | LC_ALL=C sort); then
    diff <(deb_set "$dest") <(grep -v '^#' "$lock" | LC_ALL=C sort) | head -20 >&2 || true
    die "$dest: the .debs (<) are not the installed packages (>)"
  fi
  [ "$(realpath "$lock")" = "$(realpath -m "$dest/packages.lock")" ] || cp "$lock" "$dest/packages.lock"
  echo "commit=$commit" > "$dest/build-info"
  (cd "$dest" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort \
    | xargs -d '\n' sha256sum -- > SHA256SUMS)
}

load() {
  local src=$1 dest=$2 commit=$3 top
  rm -rf "$dest"
  mkdir -p "$dest"
  if [ -d "$src" ]; then
    cp -- "$src"/* "$dest/"
  elif [ -f "$src" ]; then
    tar -C "$dest" -xf "$src" || die "$src: not a tarball of a build's debs/"
    # A tarball of the directory itself (debs/...) or of its files.
    top=$(find "$dest" -mindepth 1 -maxdepth 1)
    if [ ! -f "$dest/SHA256SUMS" ] && [ "$(echo "$top" | wc -l)" = 1 ] && [ -d "$top" ]; then
      mv "$top" "$dest.tmp" && rmdir "$dest" && mv "$dest.tmp" "$dest"
    fi
  else
    die "$src: no such directory or tarball"
  fi
  [ -f "$dest/SHA256SUMS" ] || die "$src: no SHA256SUMS (not a build's debs/)"
  local name
  for name in "${FILES[@]}"; do
    grep -q "  $name\$" "$dest/SHA256SUMS" || die "$src: SHA256SUMS does not list $name"
  done
  (cd "$dest" && sha256sum --quiet --strict -c SHA256SUMS) || die "$src: a file does not match SHA256SUMS"
  for name in "$dest"/*; do
    grep -q "  ${name##*/}\$" "$dest/SHA256SUMS" || [ "${name##*/}" = SHA256SUMS ] \
      || die "$src: ${name##*/} is not listed in SHA256SUMS"
  done
  cmp -s <(deb_set "$dest") <(LC_ALL=C sort "$dest/packages.lock") \
    || die "$src: its .debs are not its packages.lock"
  local built
  built=$(sed -n 's/^commit=//p' "$dest/build-info")
  [ "$built" = "$commit" ] || echo "image/inputs.sh: $src was recorded by commit $built;" \
    "building $commit from it (same packages; the image differs by the commit's changes)" >&2
  # A flat apt repository (Packages, Release) over the checked files.
  (cd "$dest" && apt-ftparchive packages . > Packages 2>/dev/null \
     && apt-ftparchive -o APT::FTPArchive::Release::Codename=bookworm release . > Release) \
    || die "apt-ftparchive failed (make system-image installs apt-utils)"
}

mount_repo() {
  local root=$1 repo=$2 top=$2
  # The topmost directory of REPO's path that the tree lacks: made now, removed by unmount.
  while [ ! -e "$root$(dirname "$top")" ]; do top=$(dirname "$top"); done
  echo "$top" > "$repo.top"
  mkdir -p "$root$repo"
  mount -o ro,bind "$repo" "$root$repo"
}

unmount_repo() {
  local root=$1 repo=$2 top
  top=$(cat "$repo.top")
  umount "$root$repo"
  find "$root$top" -depth -type d -empty -delete
  [ ! -e "$root$top" ] || die "$root$top is not empty after the build"
  rm -f "$repo.top"
  # The image's apt sources are the recorded build's, not this local repository.
  rm -rf "$root/etc/apt/sources.list" "$root/etc/apt/sources.list.d"
  tar -C "$root" --numeric-owner -xf "$repo/apt-sources.tar"
}

copy() {
  local src=$1 dest=$2 name
  mkdir -p "$dest"
  cp -- "$src"/*.deb "$dest/"
  for name in "${FILES[@]}"; do cp -- "$src/$name" "$dest/"; done
}

command=${1:-}
shift || true
case $command in
  record) [ $# = 2 ] || die "usage: record ROOT DEST"; record "$@" ;;
  seal) [ $# = 3 ] || die "usage: seal DEST LOCK COMMIT"; seal "$@" ;;
  load) [ $# = 3 ] || die "usage: load SRC DEST COMMIT"; load "$@" ;;
  mount) [ $# = 2 ] || die "usage: mount ROOT REPO"; mount_repo "$@" ;;
  unmount) [ $# = 2 ] || die "usage: unmount ROOT REPO"; unmount_repo "$@" ;;
  copy) [ $# = 2 ] || die "usage: copy SRC DEST"; copy "$@" ;;
  *) die "usage: record | seal | load | mount | unmount | copy (see the head of this file)" ;;
esac
