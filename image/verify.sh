#!/usr/bin/env bash
# `make image-verify`: build this commit twice, from two clean clones in different places,
# and compare. Same SHA256SUMS (the OCI archive, the VM disk, packages.lock) → reproducible;
# else show where the outputs differ: the packages (when the mirror changed between), every
# file of the two images' layers (name, mode, owner, time, content hash) side by side, and
# for the VM disks which partition's bytes differ and where.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --verify 'HEAD^{commit}')
base=${IMAGE_VERIFY_DIR:-$PWD/build/verify}
rm -rf "$base"
mkdir -p "$base"
for n in 1 2; do
  git clone --quiet --no-local --no-checkout . "$base/clone-$n"
  git -C "$base/clone-$n" checkout --quiet --detach "$commit"
  echo "== build $n in $base/clone-$n"
  (cd "$base/clone-$n" && ./image/build.sh)
done
a=$base/clone-1/build/image b=$base/clone-2/build/image
echo "== build 1"; cat "$a/SHA256SUMS"
echo "== build 2"; cat "$b/SHA256SUMS"
if cmp -s "$a/SHA256SUMS" "$b/SHA256SUMS"; then
  echo "image-verify: identical (commit $commit)"
  exit 0
fi
echo "image-verify: the builds DIFFER" >&2
if ! cmp -s "$a/packages.lock" "$b/packages.lock"; then
  echo "== the mirror changed between the builds (packages.lock):" >&2
  diff "$a/packages.lock" "$b/packages.lock" >&2 || true
fi
for n in 1 2; do
  python3 image/oci.py --list "$base/clone-$n/build/image/"*-oci.tar > "$base/files-$n"
done
diff "$base/files-1" "$base/files-2" | head -100 >&2 || true
disk_a=$(echo "$a"/*-disk.raw) disk_b=$(echo "$b"/*-disk.raw)
if [ -f "$disk_a" ] && [ -f "$disk_b" ] && ! cmp -s "$disk_a" "$disk_b"; then
  echo "== VM disks differ (byte offset: partition)" >&2
  # The partition table (sfdisk -d) of build 1 names the ranges.
  cmp -l "$disk_a" "$disk_b" 2>/dev/null | awk -v table="$(sfdisk -d "$disk_a" 2>/dev/null)" '
    BEGIN { n = split(table, lines, "\n")
            for (i = 1; i <= n; i++) if (match(lines[i], /start= *[0-9]+, size= *[0-9]+/)) {
              split(substr(lines[i], RSTART, RLENGTH), f, /[=,] */); parts++
              start[parts] = f[2] * 512; end[parts] = (f[2] + f[4]) * 512 } }
    { off = $1 - 1; where = "partition table / MBR"
      for (p = 1; p <= parts; p++) if (off >= start[p] && off < end[p])
        where = sprintf("partition %d at +%d (block %d)", p, off - start[p], int((off - start[p]) / 4096))
      if (where != last) { print off ": " where; last = where; if (++shown >= 40) exit } }' >&2
fi
exit 1
