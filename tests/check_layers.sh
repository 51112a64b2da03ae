#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when a source file includes a layer above its own (DESIGN.md §4).
set -u
cd "$(dirname "$0")/../src"
declare -A allowed=(
	[util]="util"
	[wire]="util wire"
	[link]="util link"
	[obj]="util obj"
	[engine]="util wire link obj engine"
	[cm]="util cm"
	[api]="util obj engine api cm"
	[interpose]="util interpose"
)
bad=0
checked=0
while IFS= read -r f; do
	layer=${f%%/*}
	checked=$((checked + 1))
	while IFS= read -r inc; do
		dep=${inc%%/*}
		[[ " ${allowed[$layer]} " == *" $dep "* ]] && continue
		echo "layer violation: $f includes \"$inc\""
		bad=$((bad + 1))
	done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
done < <(find . -name '*.[ch]' | sed 's|^\./||')
echo "layers: $checked files checked, $bad violations"
((bad == 0))
