#!/usr/bin/env bash
# Build the guest bed's Debian 12 image from Debian's packages: mmdebstrap
# into a directory, then an ext4 disk image made from it (mke2fs -d, no loop
# mount), with the kernel and initramfs Debian's linux-image-amd64 installed
# copied beside it for QEMU's direct kernel boot.
#
# usage: image.sh OUTDIR APTCACHE [PACKAGE...]
#   OUTDIR    receives root.img, vmlinuz and initrd.img (replaced whole)
#   APTCACHE  .deb files kept between builds (read before, written after)
#   PACKAGE   installed in the image with what they recommend: what
#             "apt install ./shaper_*.deb" pulls in (DPDK's libraries and PMDs,
#             dpdk, jansson, ...). The image is then a box's OS with DPDK
#             already present, and the operator's step in the guest installs
#             the package alone: one dpkg run, seconds under TCG, where
#             installing DPDK and python3 there (byte-compiling under TCG) took
#             more than 300 s. The .debs stay in the image's apt cache too.
#
# The guest: systemd as PID 1, udev, Debian's kernel and initramfs, the QEMU
# guest agent (the bed's management channel over virtio-serial), iproute2,
# ping; apt's lists stay, so apt in the guest resolves from the cache.
set -euo pipefail
out=${1:?usage: image.sh OUTDIR APTCACHE [PACKAGE...]}
cache=${2:?usage: image.sh OUTDIR APTCACHE [PACKAGE...]}
shift 2
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
cache=$(cd "$cache" && pwd)
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

include=systemd,systemd-sysv,udev,kmod,iproute2,iputils-ping,procps,qemu-guest-agent
include=$include,linux-image-amd64,initramfs-tools,e2fsprogs,less
# python3 as a standard Debian install has it (dpdk-devbind.py needs it): its
# first install byte-compiles the standard library, minutes under TCG.
include=$include,python3

# Hooks run outside the chroot with the root's path as $1.
customize=$work/customize.sh
cat >"$customize" <<'HOOK'
set -eu
r=$1
shift
echo shaperbox >"$r/etc/hostname"
printf '127.0.1.1\tshaperbox\n' >>"$r/etc/hosts"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$r/etc/fstab"
# A test guest: root logs in on the serial console without a password.
chroot "$r" passwd -d root >/dev/null
# Timers that would compete with the bed for the guest's two slow CPUs.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
	fstrim.timer man-db.timer; do
	ln -sf /dev/null "$r/etc/systemd/system/$u"
done
if [ $# -gt 0 ]; then
	# With what they recommend, as apt in the guest would install them.
	DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get install -y -qq \
		-o APT::Install-Recommends=true "$@" >/dev/null
fi
HOOK

start=$(date +%s)
mmdebstrap --mode=root --variant=apt --include="$include" \
	--skip=cleanup/apt/lists --skip=cleanup/apt/cache \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
	--setup-hook="sync-in $cache /var/cache/apt/archives/" \
	--customize-hook="bash $customize \"\$1\" $*" \
	--customize-hook="sync-out /var/cache/apt/archives $cache" \
	bookworm "$root" http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1 || {
	tail -30 "$work/mmdebstrap.log" >&2
	echo "vmbed image: mmdebstrap failed" >&2
	exit 1
}
t_strap=$(($(date +%s) - start))

kver=$(ls "$root/lib/modules" | sort -V | tail -1)
cp "$root/boot/vmlinuz-$kver" "$work/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$work/initrd.img"
size=$(du -sm "$root" | cut -f1)
mkfs.ext4 -q -F -L shaper-root -d "$root" "$work/root.img" "$((size + 1024))M"
rm -rf "$root"
mv -f "$work/root.img" "$work/vmlinuz" "$work/initrd.img" "$out/"
echo "vmbed image: Debian 12, kernel $kver, ${size} MiB in $out/root.img" \
	"(mmdebstrap $t_strap s, in all $(($(date +%s) - start)) s)"
