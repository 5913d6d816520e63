#!/usr/bin/env bash
# mmdebstrap's customize hook (image/build.sh): the tree at $1 gets ipamd.
#   - /opt/ipamd: this commit's tree (git archive), its venv from requirements.lock (hashes);
#   - the `ipamd` system user, /etc/ipamd (config, supervisor), ipamd.service enabled;
#   - nothing that differs between two builds: no caches, logs, machine id, snakeoil keys;
#     byte code checked by hash, not by time.
set -euo pipefail
root=$1 work=$2
: "${SOURCE_DATE_EPOCH:?}"

tar -C "$root/opt" -xf "$work/src.tar"
# The files the image adds come from the commit's tree too, not from the working copy.
cp -a --no-preserve=ownership "$root/opt/ipamd/image/rootfs/." "$root/"
chmod 0644 "$root/etc/ipamd/ipamd.toml" "$root/etc/ipamd/supervisord.conf"
chroot "$root" useradd --system --user-group --home-dir /var/lib/ipamd --no-create-home \
  --shell /usr/sbin/nologin ipamd

# The venv, with the host's pip settings bound in for this step only.
created=()
mounted=()
cleanup() {
  local i
  for ((i=${#mounted[@]}-1; i>=0; i--)); do umount "${mounted[i]}"; done
  for ((i=${#created[@]}-1; i>=0; i--)); do rm -rf "${created[i]}"; done
  mounted=() created=()
}
trap cleanup EXIT
while read -r path; do
  [ -n "$path" ] || continue
  target="$root$path"
  missing=$target
  while [ ! -e "$(dirname "$missing")" ]; do missing=$(dirname "$missing"); done
  [ -e "$target" ] || created+=("$missing")
  if [ -d "$path" ]; then mkdir -p "$target"; else mkdir -p "$(dirname "$target")"; touch "$target"; fi
  mount --bind -o ro "$path" "$target"
  mount -o remount,bind,ro "$target"
  mounted+=("$target")
done < "$work/pip-paths"
mapfile -t pip_env < "$work/pip-env"
chroot "$root" python3 -m venv /opt/ipamd/.venv
# Not gssapi: it has no Linux wheel, and building it needs libkrb5-dev and a compiler in the
# image (and would not build reproducibly: the build paths end up in the .so). It is optional
# (imported only by the ad_gsstsig DNS adapter), so the appliance image has no AD GSS-TSIG.
awk '/^gssapi==/ {skip = 1} skip && !/\\$/ {skip = 0; next} !skip' \
  "$root/opt/ipamd/requirements.lock" > "$root/tmp/requirements.lock"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
  SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" "${pip_env[@]}" \
  /opt/ipamd/.venv/bin/pip install --quiet --no-cache-dir --no-compile --require-hashes \
  -r /tmp/requirements.lock
rm -f "$root/tmp/requirements.lock"
cleanup
trap - EXIT

# The compiled DHCP hot path (image/build.sh made it from the same sources), beside src/
# where ipamd looks for it.
mkdir -p "$root/opt/ipamd/build"
cp -r --no-preserve=ownership "$work/compile/ipamd/build/mypyc" "$root/opt/ipamd/build/"
chmod -R u=rwX,go=rX "$root/opt/ipamd/build"

# ipamd itself runs from the source tree (no wheel build: nothing to stamp).
site=$(echo "$root"/opt/ipamd/.venv/lib/python3*/site-packages)
echo /opt/ipamd/src > "$site/ipamd.pth"
cat > "$root/opt/ipamd/.venv/bin/ipamd" <<'EOF'
#!/opt/ipamd/.venv/bin/python3
import sys

from ipamd.cli import main

sys.exit(main())
EOF
# On the box `ipamd token`, `ipamd backup` … find the appliance's configuration by default,
# and `ipamd restore` stops and starts supervisor's ipamd program itself (empty: it does not).
cat > "$root/usr/local/bin/ipamd" <<'EOF'
#!/bin/sh
export IPAMD_CONFIG="${IPAMD_CONFIG:-/etc/ipamd/ipamd.toml}"
export IPAMD_SUPERVISOR="${IPAMD_SUPERVISOR-/etc/ipamd/supervisord.conf}"
exec /opt/ipamd/.venv/bin/ipamd "$@"
EOF
# ipamd-import (docs/migrating.md): a Kea or ISC dhcpd configuration onto the API.
cat > "$root/opt/ipamd/.venv/bin/ipamd-import" <<'EOF'
#!/opt/ipamd/.venv/bin/python3
import sys

from ipamd.importer.cli import main

sys.exit(main())
EOF
ln -sf /opt/ipamd/.venv/bin/ipamd-import "$root/usr/local/bin/ipamd-import"
chmod 0755 "$root/opt/ipamd/.venv/bin/ipamd" "$root/usr/local/bin/ipamd" \
  "$root/opt/ipamd/.venv/bin/ipamd-import"
find "$root/opt/ipamd" "$root/usr/lib/python3" -name __pycache__ -type d -prune -exec rm -rf {} +
chroot "$root" /opt/ipamd/.venv/bin/python3 -m compileall -q -j1 \
  --invalidation-mode checked-hash /opt/ipamd/src /opt/ipamd/.venv/lib /usr/lib/python3 \
  >/dev/null || true

chroot "$root" systemctl enable ipamd.service >/dev/null 2>&1
# The VM (units that do nothing in a container): the state disk on /var/lib/ipamd, its network
# files, systemd-networkd. Nothing waits for "online" (ipamd listens on 0.0.0.0): masked, so a
# first boot's presets cannot enable it again.
chroot "$root" systemctl enable systemd-networkd.service var-lib-ipamd.mount \
  ipamd-network.service >/dev/null 2>&1
chroot "$root" systemctl disable systemd-networkd-wait-online.service >/dev/null 2>&1
chroot "$root" systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1
# The first boot of a VM (empty machine id) must not stop to ask for a locale, time zone or
# root password on the console.
chroot "$root" systemctl mask systemd-firstboot.service >/dev/null 2>&1
# The VM's initramfs again, now with everything installed, times clamped (SOURCE_DATE_EPOCH).
if ls "$root"/boot/vmlinuz-* >/dev/null 2>&1; then
  chroot "$root" env SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" update-initramfs -u -k all >/dev/null
fi
# What differs from one build to the next, or belongs to one machine.
rm -f "$root"/etc/ssl/private/ssl-cert-snakeoil.key "$root"/etc/ssl/certs/ssl-cert-snakeoil.pem
find "$root/etc/ssl/certs" -xtype l -delete
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id" "$root/var/cache/ldconfig/aux-cache"
rm -rf "$root"/var/log/apt/* "$root"/var/cache/debconf/*-old "$root"/root/.cache
rm -f "$root"/var/log/dpkg.log "$root"/var/log/alternatives.log "$root"/var/log/bootstrap.log
find "$root/var/log" -type f -size +0 -delete
# ucf (postgresql-common's createcluster.conf) leaves its temporary file's random name in
# debconf's database; the file itself is long gone.
sed -i 's#^\( *NEW = /tmp/[a-z-]*\.\)[A-Za-z0-9]*$#\1XXXXXX#' "$root/var/cache/debconf/config.dat"
