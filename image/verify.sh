#!/usr/bin/env bash
# `make image-verify`: build this commit twice, from two clean clones in different places,
# and compare. Same SHA256SUMS → reproducible; else show where the outputs differ
# (diffoscope when installed, else every file's hash in each build).
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
if command -v diffoscope >/dev/null; then
  diffoscope --max-report-size 2000000 --text - "$a" "$b" | head -400 >&2 || true
else
  for d in "$a" "$b"; do
    (cd "$d" && for f in *.tar; do mkdir -p x && tar -C x -xf "$f"; done
     find x -type f -print0 | sort -z | xargs -0 sha256sum > "$d.files"; rm -rf x)
  done
  diff "$a.files" "$b.files" | head -200 >&2 || true
fi
exit 1
