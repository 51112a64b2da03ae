#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the claims benchmark (examples/claims.c) as two processes under
# tools/uroce run and writes, into OUT (default build/claims):
#   claims.tsv   the client's lines: claim, variant, x, metric, value
#   claims.md    the same as one markdown table per claim
# and with --plot DIR, the SVG plots of claims_plot.gp into DIR (the ones
# docs/patterns.md shows are in docs/img/).
#
# usage: examples/claims.sh [--short] [--out OUT] [--plot DIR] [--build B]
set -euo pipefail
cd "$(dirname "$0")/.."
short=
out=build/claims
plot=
build=build
while (($#)); do
	case $1 in
	--short) short=--short ;;
	--out) out=$2; shift ;;
	--plot) plot=$2; shift ;;
	--build) build=$2; shift ;;
	-h|--help) sed -n '3,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "claims.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
build=$(cd "$build" && pwd)
bin=$build/examples/claims
[[ -x $bin ]] || { echo "claims.sh: no $bin (build first)" >&2; exit 2; }
mkdir -p "$out"
# a runtime directory of our own, so that no other listener meets ours
rt=$(mktemp -d /tmp/uroce-claims.XXXXXX)
trap 'rm -rf "$rt"' EXIT
export XDG_RUNTIME_DIR=$rt UROCE_LIBDIR=$build/lib
port=$((20000 + RANDOM % 20000))
tools/uroce run -- "$bin" -s -p "$port" >"$out/server.log" 2>&1 &
srv=$!
ok=0
if tools/uroce run -- "$bin" -c 127.0.0.1 -p "$port" $short >"$out/claims.raw" 2>"$out/client.log"; then
	ok=1
fi
wait "$srv" || ok=0
if ((!ok)); then
	echo "claims.sh: the benchmark failed" >&2
	cat "$out/server.log" "$out/client.log" >&2
	exit 1
fi
grep -v '^#' "$out/claims.raw" >"$out/claims.tsv"
{
	echo "<!-- $(head -n1 "$out/claims.raw" | sed 's/^# //'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) -->"
	awk -F'\t' '
		$1 != last { if (last != "") print ""; last = $1
			print "**" $1 "**"; print ""
			print "| variant | x | metric | value |"; print "|---|---|---|---|" }
		{ print "| " $2 " | " $3 " | " $4 " | " $5 " |" }' "$out/claims.tsv"
} >"$out/claims.md"
echo "claims.sh: $(wc -l <"$out/claims.tsv") numbers in $out/claims.tsv and $out/claims.md"
if [[ -n $plot ]]; then
	command -v gnuplot >/dev/null || { echo "claims.sh: no gnuplot (scripts/install-deps.sh installs gnuplot-nox)" >&2; exit 3; }
	mkdir -p "$plot"
	gnuplot -e "tsv='$out/claims.tsv'; dir='$plot'" examples/claims_plot.gp
	echo "claims.sh: plots in $plot"
fi
