#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the commands of docs/tutorial.md that are marked for it (a ```sh
# block right after a line "<!-- run -->"), in order, each block with
# errexit and pipefail, so that the tutorial cannot go stale. They run in
# a scratch directory where build/ and tools/ are this tree's, with a
# runtime directory of their own.
# usage: test_tutorial.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
md=$src/docs/tutorial.md
for t in ibv_devinfo tshark; do
	if ! command -v $t >/dev/null; then
		echo "skip: $t not installed (scripts/install-deps.sh)"
		exit 77
	fi
done
tmp=$(mktemp -d /tmp/uroce-tutorial.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ln -s "$build" "$tmp/build"
ln -s "$src/tools" "$tmp/tools"
ln -s "$src/examples" "$tmp/examples"
mkdir "$tmp/run"
export XDG_RUNTIME_DIR=$tmp/run UROCE_LIBDIR=$build/lib
# the blocks, one file each
awk -v dir="$tmp" '
	/^<!-- run -->$/ { want = 1; next }
	want && /^```sh$/ { n++; f = sprintf("%s/block%02d.sh", dir, n); inb = 1; want = 0; next }
	inb && /^```$/ { inb = 0; close(f); next }
	inb { print > f; next }
	{ want = 0 }' "$md"
blocks=("$tmp"/block*.sh)
if [[ ! -e ${blocks[0]} ]]; then
	echo "FAIL: no <!-- run --> blocks in $md"
	exit 1
fi
fail=0
cd "$tmp" || exit 1
for b in "${blocks[@]}"; do
	name=$(basename "$b" .sh)
	if timeout 120 bash -eo pipefail "$b" >"$b.out" 2>&1; then
		echo "PASS $name: $(head -n1 "$b")"
	else
		echo "FAIL $name (exit $?):"
		sed 's/^/    /' "$b"
		echo "  output:"
		tail -n 20 "$b.out" | sed 's/^/    /'
		fail=1
	fi
done
echo "tutorial: ${#blocks[@]} blocks run"
exit $fail
