#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The claims benchmark in its short mode, to show that it runs: every
# claim must print its numbers and the plots must come out. The numbers
# are not checked (they go to docs/patterns.md, not to assertions).
# usage: test_claims.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/uroce-claims-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
plot=(--plot "$tmp/img")
command -v gnuplot >/dev/null || plot=()
examples/claims.sh --short --build "$1" --out "$tmp" "${plot[@]}" || exit 1
fail=0
for c in inline postlist signal align events regmr aggregate rendezvous; do
	grep -q "^$c	" "$tmp/claims.tsv" || { echo "FAIL: no numbers for $c"; fail=1; }
done
if ((${#plot[@]})); then
	for p in inline postlist signal aggregate rendezvous; do
		[[ -s $tmp/img/claims_$p.svg ]] || { echo "FAIL: no plot $p"; fail=1; }
	done
fi
((fail)) && exit 1
cat "$tmp/claims.md"
if ((!${#plot[@]})); then
	echo "skip: gnuplot not installed (scripts/install-deps.sh), plots not tried"
	exit 77
fi
echo "PASS claims (short run)"
