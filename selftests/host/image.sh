#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The disk image of make check-host's guest: a Debian 12 (bookworm) root
# made with mmdebstrap from this machine's own apt sources (read here at
# run time: /etc/apt/sources.list.d/*.sources and /etc/apt/sources.list),
# with systemd, udev, DKMS, the compiler, pkg-config and Debian's 6.1
# kernel and its headers, and what ratelimit-global and python3-kratelimit
# need (libhiredis, python3) with a redis-server for rlsyncd's test (its
# unit masked: the test starts one of its own), since the guest has no
# network. Cached outside
# the repo like the debug kernel:
#   $RL_CACHE, else /var/cache/ratelimit (root), else ~/.cache/ratelimit,
# in host-bookworm-KEY, KEY a hash of what goes into it (the suite, the
# packages, the setup hooks, the apt sources, mmdebstrap's version), with
#   root.img       the ext4 root file system (raw, sparse)
#   vmlinuz, initrd.img, release   the image's own kernel
#   packages.txt   the packages in it and their versions
#   selftests/host/image.sh         build it unless it is cached
#   selftests/host/image.sh dir     print the cache entry's directory
# Building it needs root (mmdebstrap's root mode, mkfs.ext4 -d keeping
# the owners); a few minutes, most of them downloads and dpkg.
# RL_HOST_VARIANT=containers makes the image of make check-containers
# instead (selftests/host/containers.sh): the same with Debian's podman,
# crun and docker.io (and apparmor, whose parser dockerd needs on a kernel
# with AppArmor, as Debian's is), in containers-bookworm-KEY.
set -eu

suite=bookworm
pkgs="systemd systemd-sysv udev dbus kmod dkms gcc make libc6-dev pkgconf
linux-image-amd64 linux-headers-amd64 initramfs-tools zstd e2fsprogs
passwd procps libhiredis0.14 libsystemd0 python3 redis-server"
variant=${RL_HOST_VARIANT:-host}
case $variant in
host) ;;
containers) pkgs="$pkgs podman crun docker.io apparmor" ;;
*) echo "image: RL_HOST_VARIANT is host or containers, not $variant" >&2; exit 2 ;;
esac
size=6G
# The setup after the packages: no timer that takes dpkg's lock or
# reaches for a network while the test runs, a machine id (no first-boot
# setup), root without a password on the serial console (for a look by
# hand), the root file system on the first virtio disk, and the unit that
# runs the test when the kernel command line has rl.stage=: in a normal
# boot, along with the rest of multi-user.target, it mounts the second
# disk (run.sh) and runs its guest.sh, then powers off. mmdebstrap runs
# the hooks with the root's directory as $1.
# shellcheck disable=SC2016
hooks='echo rlhost > "$1/etc/hostname"
printf "127.0.0.1 localhost\n127.0.1.1 rlhost\n" > "$1/etc/hosts"
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$1/etc/fstab"
rm -f "$1/etc/machine-id" && chroot "$1" systemd-machine-id-setup
chroot "$1" passwd --delete root
for t in apt-daily apt-daily-upgrade dpkg-db-backup e2scrub_all fstrim man-db; do
	ln -sf /dev/null "$1/etc/systemd/system/$t.timer"
done
ln -sf /dev/null "$1/etc/systemd/system/redis-server.service"
cat > "$1/etc/systemd/system/rl-check-host.service" <<EOF
[Unit]
Description=make check-host: selftests/host/guest.sh from the second disk
ConditionKernelCommandLine=rl.stage
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
TimeoutStartSec=infinity
ExecStart=/bin/sh -c "mount -o ro /dev/vdb /mnt && exec /bin/sh /mnt/guest.sh"

[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$1/etc/systemd/system/multi-user.target.wants"
ln -s ../rl-check-host.service "$1/etc/systemd/system/multi-user.target.wants/"
chroot "$1" dpkg-query -W > "$1/../packages.txt"'

if [ -n "${RL_CACHE:-}" ]; then
	cache=$RL_CACHE
elif [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/ratelimit
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/ratelimit
fi

# The apt sources of this machine, as mmdebstrap takes them: a deb822
# .sources file or a one-line sources.list, each as a "mirror".
sources=
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
	[ -f "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" &&
		sources="$sources $f"
done
[ -n "$sources" ] || { echo "image: no apt sources in /etc/apt" >&2; exit 1; }

# shellcheck disable=SC2086 # the list of files
key=$( { echo "$suite $pkgs $size"; echo "$hooks"; cat $sources;
	dpkg-query -W -f='${Version}\n' mmdebstrap 2>/dev/null || true; } |
	sha256sum | cut -c1-16)
dir=$cache/$variant-$suite-$key

case ${1:-build} in
dir) echo "$dir"; exit 0 ;;
build) ;;
*) echo "usage: $0 [build|dir]" >&2; exit 2 ;;
esac

[ -f "$dir/.done" ] && { echo "image: cached in $dir"; exit 0; }

mkdir -p "$cache"
exec 9> "$cache/.lock-$variant"
flock 9
[ -f "$dir/.done" ] && { echo "image: cached in $dir"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "image: building the guest's image needs root" >&2; exit 1; }

start=$(date +%s)
log=$dir/build.log
echo "image: building a $suite image for the guest in $dir (log $log)"
rm -rf "$dir"
mkdir -p "$dir"
# Older entries of the cache are of no further use.
find "$cache" -mindepth 1 -maxdepth 1 -name "$variant-*" ! -path "$dir" \
	-exec rm -rf {} + 2>/dev/null || true
root=$dir/root

fail() { tail -n 30 "$log" >&2; echo "image: $*" >&2; exit 1; }

# shellcheck disable=SC2086 # the lists
mmdebstrap --variant=minbase --mode=root --format=directory \
	--aptopt='APT::Install-Recommends "false"' \
	--include="$(echo $pkgs | tr ' ' ',')" --customize-hook="$hooks" \
	"$suite" "$root" $sources > "$log" 2>&1 || fail "mmdebstrap failed"

release=$(find "$root/boot" -name 'vmlinuz-*' -printf '%f\n' |
	sed 's/^vmlinuz-//' | sort -V | tail -n 1)
if [ -z "$release" ] || [ ! -f "$root/boot/initrd.img-$release" ] ||
	[ ! -d "$root/usr/src/linux-headers-$release" ]; then
	fail "no kernel, initrd and headers of one release in the image"
fi
cp "$root/boot/vmlinuz-$release" "$dir/vmlinuz"
cp "$root/boot/initrd.img-$release" "$dir/initrd.img"
echo "$release" > "$dir/release"
mkfs.ext4 -q -F -L rlroot -d "$root" "$dir/root.img" "$size" >> "$log" 2>&1 ||
	fail "mkfs.ext4 failed"
rm -rf "$root"
touch "$dir/.done"
echo "image: built ($release, $(du -sh "$dir/root.img" | cut -f1)) in $(($(date +%s) - start)) s"
