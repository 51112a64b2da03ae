#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Makes the rxe guest's boot files from Debian packages only, into
# RXE_VM_IMAGE (default /var/tmp/uroce-rxe-vm):
#   rootfs/       the guest's tree: debootstrap of Debian 12 (minbase) with
#                 the stock kernel and rdma-core's programs
#   rootfs.img    that tree as an ext4 image; guests boot it with
#                 snapshot=on, so it is only read and many can share it
#   vmlinuz, initrd.img, kernel-version
# The tree is kept and reused while the package list stays the same, so a
# change of guest-init alone costs about a minute, not a debootstrap.
# Runs in the machine's own network namespace: debootstrap needs the
# mirror apt uses (MIRROR= overrides). Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
IMAGE=${RXE_VM_IMAGE:-/var/tmp/uroce-rxe-vm}
SUITE=${SUITE:-bookworm}
# what the interop cases run in the guest: verbs, perftest, rdma_cm and
# rsocket programs, the rdma and ss commands (iproute2) that tell when a
# server listens, and what the kernel needs to boot from an initramfs
PKGS=linux-image-amd64,initramfs-tools,kmod,udev,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,iproute2,procps
TREE=$IMAGE/rootfs
say() { echo "mkimage: $*"; }
fail() { echo "mkimage: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || fail "must run as root (debootstrap, chroot)"
for c in debootstrap mkfs.ext4 chroot; do
	command -v $c >/dev/null || fail "missing $c (scripts/install-deps.sh)"
done

# The first plain Debian archive (not -security, not -updates) apt knows,
# in deb822 or one-line form.
find_mirror() {
	local f u
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		for u in $(awk 'tolower($1) == "uris:" { $1 = ""; print }' "$f"); do
			[[ $u =~ ^(https?|file):.*/debian/?$ ]] && { echo "$u"; return; }
		done
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++)
				if ($i ~ /^(https?|file):.*\/debian\/?$/) { print $i; exit } }' "$f")
		[[ -n $u ]] && { echo "$u"; return; }
	done
}

mkdir -p "$IMAGE"
want="$SUITE $PKGS"
if [[ ! -f $TREE/.uroce-tree || $(<"$TREE/.uroce-tree") != "$want" ]]; then
	mirror=${MIRROR:-$(find_mirror)}
	[[ -n $mirror ]] || fail "no Debian mirror found in /etc/apt (set MIRROR=)"
	say "debootstrap $SUITE from $mirror"
	rm -rf "$TREE" "$TREE.new"
	# a tree that debootstrap did not finish is never taken for one
	timeout 1800 debootstrap --variant=minbase --include="$PKGS" \
		"$SUITE" "$TREE.new" "$mirror"
	echo "$want" >"$TREE.new/.uroce-tree"
	mv "$TREE.new" "$TREE"
fi

kver=$(ls "$TREE/lib/modules" | sort -V | tail -n 1)
[[ -n $kver ]] || fail "no kernel in $TREE/lib/modules"
find "$TREE/lib/modules/$kver" -name 'rdma_rxe.ko*' | grep -q . ||
	fail "the guest kernel $kver has no rdma_rxe module"
say "guest kernel $kver"

install -m 0755 "$HERE/guest-init" "$TREE/sbin/uroce-guest-init"
echo uroce-rxe-guest >"$TREE/etc/hostname"
echo "/dev/vda / ext4 rw 0 0" >"$TREE/etc/fstab"
# The initramfs has to find only a virtio disk with ext4 on it: listing
# those modules keeps it at a few MB, which a TCG guest unpacks quickly.
conf=$TREE/etc/initramfs-tools/initramfs.conf
sed -i -e 's/^MODULES=.*/MODULES=list/' -e 's/^COMPRESS=.*/COMPRESS=gzip/' "$conf"
printf '%s\n' virtio_pci virtio_blk ext4 crc32c_generic \
	>"$TREE/etc/initramfs-tools/modules"
mount -t proc none "$TREE/proc"
trap 'umount "$TREE/proc" 2>/dev/null || :' EXIT
chroot "$TREE" update-initramfs -u -k "$kver"
umount "$TREE/proc"
trap - EXIT
# what no guest reads: a smaller image is quicker to make
rm -rf "$TREE"/usr/share/doc/* "$TREE"/usr/share/man/* \
	"$TREE"/usr/share/locale/* "$TREE"/var/cache/apt/archives/*.deb \
	"$TREE"/var/lib/apt/lists/*

cp "$TREE/boot/vmlinuz-$kver" "$IMAGE/vmlinuz.new"
cp "$TREE/boot/initrd.img-$kver" "$IMAGE/initrd.img.new"
rm -f "$IMAGE/rootfs.img.new"
mkfs.ext4 -q -F -L uroce-rxe -E root_owner=0:0 -d "$TREE" \
	"$IMAGE/rootfs.img.new" 2G
# the image is complete before any of its files is replaced
for f in vmlinuz initrd.img rootfs.img; do
	mv "$IMAGE/$f.new" "$IMAGE/$f"
done
echo "$kver" >"$IMAGE/kernel-version"
say "image ready in $IMAGE ($(du -sh --apparent-size "$IMAGE/rootfs.img" | cut -f1) sparse, $(du -sh "$IMAGE/rootfs.img" | cut -f1) used)"
