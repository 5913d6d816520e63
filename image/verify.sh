#!/usr/bin/env bash
# `make image-verify`: build this commit twice, from two clean clones in different places,
# and compare. Same SHA256SUMS → reproducible; else show where the outputs differ: every file
# of the two images' layers (name, mode, owner, time, content hash) side by side, then
# diffoscope on the first differing file when it is installed.
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
for n in 1 2; do
  python3 image/oci.py --list "$base/clone-$n/build/image/"*-oci.tar > "$base/files-$n"
done
diff "$base/files-1" "$base/files-2" | head -100 >&2 || true
exit 1
