#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the claims benchmark (examples/claims.c) as two processes under
# tools/uroce run and writes, into OUT (default build/claims):
#   claims.tsv   claim, variant, x, metric, median, lowest, highest: the
#                client's numbers over the --runs N runs (default 1)
#   claims.md    the same as one markdown table per claim (with --runs,
#                each value with the lowest and highest of the runs)
# and with --plot DIR, the SVG plots of claims_plot.gp into DIR (the ones
# docs/patterns.md shows are in docs/img/).
#
# usage: examples/claims.sh [--short] [--runs N] [--out OUT] [--plot DIR] [--build B]
set -euo pipefail
cd "$(dirname "$0")/.."
short=
runs=1
out=build/claims
plot=
build=build
while (($#)); do
	case $1 in
	--short) short=--short ;;
	--out) out=$2; shift ;;
	--runs) runs=$2; shift ;;
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
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$out/claims.all"
for ((r = 1; r <= runs; r++)); do
	port=$((20000 + RANDOM % 20000))
	tools/uroce run -- "$bin" -s -p "$port" >"$out/server.log" 2>&1 &
	srv=$!
	ok=0
	if tools/uroce run -- "$bin" -c 127.0.0.1 -p "$port" $short >"$out/claims.raw" 2>"$out/client.log"; then
		ok=1
	fi
	wait "$srv" || ok=0
	if ((!ok)); then
		echo "claims.sh: the benchmark failed (run $r)" >&2
		cat "$out/server.log" "$out/client.log" >&2
		exit 1
	fi
	grep -v '^#' "$out/claims.raw" >>"$out/claims.all"
done
# per row (claim, variant, x, metric, in first-seen order): the median
# of the runs, and their lowest and highest
awk -F'\t' -v OFS='\t' -v md="$out/claims.md.body" '
	{ k = $1 FS $2 FS $3 FS $4
	  if (!(k in n)) order[++nk] = k
	  v[k, ++n[k]] = $5 }
	END {
		for (i = 1; i <= nk; i++) {
			k = order[i]; m = n[k]
			for (a = 1; a <= m; a++) s[a] = v[k, a] + 0
			for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++)
				if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
			med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
			print k, sprintf("%.4g", med), s[1], s[m]
			split(k, f, FS)
			if (f[1] != last) {
				if (last != "") print "" > md
				last = f[1]
				print "**" f[1] "**\n" > md
				print "| variant | x | metric | median | lowest | highest |" > md
				print "|---|---|---|---|---|---|" > md
			}
			printf "| %s | %s | %s | %.4g | %.4g | %.4g |\n", f[2], f[3], f[4], med, s[1], s[m] > md
		}
	}' "$out/claims.all" >"$out/claims.tsv"
{
	echo "<!-- $(head -n1 "$out/claims.raw" | sed 's/^# //'); $runs run(s); $(nproc) cores, load $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after -->"
	cat "$out/claims.md.body"
} >"$out/claims.md"
rm -f "$out/claims.md.body"
echo "claims.sh: $(wc -l <"$out/claims.tsv") numbers in $out/claims.tsv and $out/claims.md"
if [[ -n $plot ]]; then
	command -v gnuplot >/dev/null || { echo "claims.sh: no gnuplot (scripts/install-deps.sh installs gnuplot-nox)" >&2; exit 3; }
	mkdir -p "$plot"
	gnuplot -e "tsv='$out/claims.tsv'; dir='$plot'" examples/claims_plot.gp
	echo "claims.sh: plots in $plot"
fi
