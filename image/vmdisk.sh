#!/usr/bin/env bash
# The VM disk (image/build.sh): the finished root file system → one bootable raw disk,
# byte for byte the same for the same tree.
#
#   image/vmdisk.sh ROOTFS OUT.raw SEED
#
#   MBR (syslinux's mbr.bin, disk id from SEED)
#   ├─ 1: FAT16 "IPAMD-BOOT", 256 MiB, active: syslinux (ldlinux.sys/.c32, syslinux.cfg),
#   │     vmlinuz, initrd.img (the tree's /boot ones)
#   └─ 2: ext4 "ipamd-root" (UUID from SEED): the tree itself (mke2fs -d), mounted rw as /
#
# The state (/var/lib/ipamd) is not on this disk: it is the VM's second disk (image/README.md).
# The tools are the tree's own (its locked e2fsprogs, dosfstools, mtools, syslinux, fdisk): they
# run chrooted in a private mount namespace where the tree is read-only and bound at /mnt/src.
# What would differ between two builds is fixed: file system UUIDs, hash seed, FAT volume id
# from SEED; every time is SOURCE_DATE_EPOCH (E2FSPROGS_FAKE_TIME for what mke2fs makes, a
# debugfs pass for the atime/ctime that `mke2fs -d` copies from the tree, mtools' own
# SOURCE_DATE_EPOCH, mkfs.vfat --invariant).
set -euo pipefail
rootfs=$(realpath "$1") out=$2 seed=$3
: "${SOURCE_DATE_EPOCH:?}"
die() { echo "image/vmdisk.sh: $*" >&2; exit 1; }
[ -d "$rootfs/boot" ] || die "no $rootfs/boot"
kernels=("$rootfs"/boot/vmlinuz-*)
[ ${#kernels[@]} = 1 ] && [ -f "${kernels[0]}" ] || die "want exactly one kernel in /boot"
kver=${kernels[0]##*/vmlinuz-}
[ -f "$rootfs/boot/initrd.img-$kver" ] || die "no /boot/initrd.img-$kver"

# Ids from SEED (the commit): the same for one commit, different for the next.
hex=$(printf 'ipamd-vm-disk %s' "$seed" | sha256sum | cut -c1-64)
uuid_of() { echo "${1:0:8}-${1:8:4}-4${1:13:3}-8${1:17:3}-${1:20:12}"; }
root_uuid=$(uuid_of "${hex:0:32}")
hash_seed=$(uuid_of "${hex:32:32}")
disk_id=0x${hex:0:8}
fat_id=${hex:8:8}

# Sizes (MiB): the root file system gets its files (4 KiB blocks) + 20 % + 1 GiB, rounded up
# to 256 MiB: the same tree gives the same size.
data=$(find "$rootfs" -xdev -type f -printf '%s\n' | awk '{s += int(($1 + 4095) / 4096)} END {print int(s * 4096 / 1048576)}')
root_mib=$(( (data * 6 / 5 + 1024 + 255) / 256 * 256 ))
boot_mib=256
boot_start=2048                                   # sectors: 1 MiB
root_start=$(( boot_start + boot_mib * 2048 ))
total_mib=$(( 1 + boot_mib + root_mib ))

# Inside the tree: the whole assembly, by the tree's own tools.
vm=$(mktemp -d "$(dirname "$out")/vmdisk.XXXXXX")
trap 'rm -rf "$vm"' EXIT
cat > "$vm/syslinux.cfg" <<EOF
SERIAL 0 115200
DEFAULT ipamd
PROMPT 0
TIMEOUT 0
LABEL ipamd
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND root=UUID=$root_uuid rw console=tty0 console=ttyS0,115200n8
EOF
# debugfs: every inode's atime and ctime (mke2fs -d copies the tree's) := SOURCE_DATE_EPOCH.
(cd "$rootfs" && find . -xdev -printf '%P\n') > "$vm/paths"
if grep -q '"' "$vm/paths"; then die "a path with a double quote: debugfs cannot name it"; fi
awk -v t="@$SOURCE_DATE_EPOCH" '{p = "/" $0; printf "sif \"%s\" atime %s\nsif \"%s\" ctime %s\n", p, t, p, t}' \
  "$vm/paths" > "$vm/times.debugfs"
cat > "$vm/assemble.sh" <<EOF
set -euo pipefail
cd /mnt/out
export E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH MTOOLS_SKIP_CHECK=1
# 2: the root file system from the tree.
truncate -s ${root_mib}M root.img
mke2fs -q -F -t ext4 -L ipamd-root -U $root_uuid -m 1 \\
  -E hash_seed=$hash_seed,root_owner=0:0 -d /mnt/src root.img
debugfs -w -f times.debugfs root.img > debugfs.out 2> debugfs.err
if grep -v '^debugfs ' debugfs.err | grep -q .; then cat debugfs.err >&2; exit 1; fi
e2fsck -fn root.img > e2fsck.out 2>&1 || { cat e2fsck.out >&2; exit 1; }
# 1: the boot partition: FAT with syslinux, the kernel and the initramfs.
truncate -s ${boot_mib}M boot.img
mkfs.vfat --invariant -i $fat_id -n IPAMD-BOOT -h $boot_start boot.img > /dev/null
mcopy -i boot.img -m /mnt/src/boot/vmlinuz-$kver ::vmlinuz
mcopy -i boot.img -m /mnt/src/boot/initrd.img-$kver ::initrd.img
mcopy -i boot.img -m syslinux.cfg ::syslinux.cfg
syslinux --install boot.img
# The disk: MBR, partition table, the two partitions.
truncate -s ${total_mib}M disk.raw
sfdisk --quiet --no-reread --no-tell-kernel --wipe never disk.raw <<TABLE
label: dos
label-id: $disk_id
unit: sectors
start=$boot_start, size=$(( boot_mib * 2048 )), type=e, bootable
start=$root_start, size=$(( root_mib * 2048 )), type=83
TABLE
dd if=/usr/lib/syslinux/mbr/mbr.bin of=disk.raw bs=440 count=1 conv=notrunc status=none
dd if=boot.img of=disk.raw bs=1M seek=1 conv=notrunc,sparse status=none
dd if=root.img of=disk.raw bs=1M seek=$(( 1 + boot_mib )) conv=notrunc,sparse status=none
EOF
touch -d "@$SOURCE_DATE_EPOCH" "$vm/syslinux.cfg"

# A private mount namespace: the tree read-only, with its own /tmp, /mnt (src + out), /dev and
# /proc; every mount goes away with the namespace.
unshare --mount --propagation private -- bash -euo pipefail -c '
  rootfs=$1 vm=$2
  mount --bind "$rootfs" "$rootfs"
  mount -o remount,bind,ro "$rootfs"
  mount -t tmpfs -o mode=0755 tmpfs "$rootfs/mnt"
  mount -t tmpfs -o mode=1777 tmpfs "$rootfs/tmp"
  mount --rbind /dev "$rootfs/dev"
  mount -t proc proc "$rootfs/proc"
  mkdir "$rootfs/mnt/src" "$rootfs/mnt/out"
  mount --bind "$rootfs" "$rootfs/mnt/src"   # not recursive: the tree alone, no mounts above
  mount -o remount,bind,ro "$rootfs/mnt/src"
  mount --bind "$vm" "$rootfs/mnt/out"
  chroot "$rootfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 TZ=UTC \
    SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" bash /mnt/out/assemble.sh
' _ "$rootfs" "$vm"
mv "$vm/disk.raw" "$out"
echo "image/vmdisk.sh: $out: ${total_mib} MiB (boot ${boot_mib}, root ${root_mib}; kernel $kver, root UUID $root_uuid)"
