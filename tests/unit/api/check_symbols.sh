#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check_symbols.sh OURS REAL ALLOWLIST
# Compares the defined dynamic symbols (name + version, default "IBVERBS_x"
# and non-default "(IBVERBS_x)") of our libibverbs.so.1 with rdma-core's.
# Every difference must be listed in ALLOWLIST as "+ VERSION NAME" (only in
# ours) or "- VERSION NAME" (only in rdma-core), with a reason after '#'.
set -u
ours=$1 real=$2 allow=$3

if [[ ! -e $real ]]; then
	echo "no reference library $real; skipping"
	exit 77	# ctest's SKIP_RETURN_CODE for this entry
fi

syms() {	# defined symbols as "VERSION NAME", sorted
	objdump -T "$1" | awk '$0 ~ /^[0-9a-f]+ / && $0 !~ /\*UND\*/ {
		print $(NF-1), $NF }' | sort -u
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
syms "$ours" >"$tmp/ours"
syms "$real" >"$tmp/real"
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$allow" |
	awk '{ print $1, $2, $3 }' | sort -u >"$tmp/allow"

comm -23 "$tmp/ours" "$tmp/real" | sed 's/^/+ /' >"$tmp/diff"
comm -13 "$tmp/ours" "$tmp/real" | sed 's/^/- /' >>"$tmp/diff"
sort -o "$tmp/diff" "$tmp/diff"

bad=$(comm -23 "$tmp/diff" "$tmp/allow")
stale=$(comm -13 "$tmp/diff" "$tmp/allow")
echo "ours: $(wc -l <"$tmp/ours") symbols, rdma-core: $(wc -l <"$tmp/real")"
if [[ -n $stale ]]; then
	echo "allowlist entries that no longer differ (remove them):"
	echo "$stale"
fi
if [[ -n $bad ]]; then
	echo "unexplained differences (+ only ours, - only rdma-core):"
	echo "$bad"
	exit 1
fi
echo "symbol set matches (allowlisted differences: $(wc -l <"$tmp/allow"))"
exit 0
