#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Renders every man page of man/ as man(1) would, with groff's warnings on
# (issue 25: uroce(7) rendered with "cannot adjust line" and "can't break
# line"), at 80 columns and at the 65 of a narrow terminal, and fails on
# any warning. Exit 77 without groff.
set -u
cd "$(dirname "$0")/.." || exit 2
command -v groff >/dev/null || { echo "skip: groff not installed (package groff-base)"; exit 77; }
bad=0 n=0
for page in man/*.[1-9]; do
	n=$((n + 1))
	for width in 80 65; do
		# man --warnings -l is the same groff run; groff direct needs no
		# man-db, and -rLL sets the width man would
		out=$(groff -ww -man -Tutf8 -rLL=${width}n -z "$page" 2>&1)
		if [[ -n $out ]]; then
			echo "$page at $width columns:"
			echo "$out"
			bad=$((bad + 1))
		fi
	done
done
echo "man: $n pages rendered, $bad renderings with warnings"
((n > 0 && bad == 0))
