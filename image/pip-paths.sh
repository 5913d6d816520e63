#!/usr/bin/env bash
# The build host's pip settings as paths, one a line: the configuration files pip reads and
# every local path they (or PIP_* variables) name — wheel directories, file:// indexes (with
# the parent of a .../simple index: its pages link to ../files),
# constraints, certificates. image/customize.sh binds them read-only into the tree while pip
# runs and removes them after: the image never holds them.
set -euo pipefail
pip=$(command -v pip || command -v pip3 || true)
[ -n "$pip" ] || exit 0
{
  "$pip" config debug 2>/dev/null | sed -n 's/^ *\(\/[^,]*\), exists: True$/\1/p'
  { "$pip" config list 2>/dev/null | sed "s/^[^=]*=//; s/^'//; s/'$//"
    env | sed -n 's/^PIP_[A-Z_]*=//p'; } | tr ' ' '\n' \
    | sed -n -e 's#^file://\(/.*\)/simple/*$#\1#p' -e 's#^file://##p' -e '/^\//p'
} | while read -r path; do [ -e "$path" ] && echo "$path"; done | sort -u
