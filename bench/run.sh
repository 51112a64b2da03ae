#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# perftest over uroce next to this machine's own limits, in one run
# (docs/benchmarks.md, "perftest over uroce"). Builds nothing:
#
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build
#   bench/run.sh [--write] [build-dir] [reps]
#
# build-dir defaults to ./build, reps to 3. Every round runs, in this order,
# so that load drift on a shared machine hits all of them alike:
#   raw UDP 64 B ping-pong (blocking, busy) [udp_bench], the same through
#   link/ [link_bench], perftest latency over uroce in default (blocking)
#   mode, raw UDP 4 KiB throughput (sendto, mmsg x32, GSO+GRO), memcpy
#   64 KiB / 1 MiB, perftest bandwidth at 64 KiB, perftest latency with
#   UROCE_BUSY_POLL=1.
# Then bench/report.py takes the medians over the rounds and the ratios to
# the baselines, prints a markdown section and, with --write, puts it
# between the markers of docs/benchmarks.md. Raw outputs stay in the
# directory printed at the end (BENCH_OUT to choose it).
# Every program runs under a timeout; a failed run is left out and counted.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
orig="$*"
write=0
if [[ ${1:-} == --write ]]; then
	write=1
	shift
fi
b=${1:-$repo/build}
reps=${2:-3}
b=$(cd "$b" 2>/dev/null && pwd) || { echo "no build dir ${1:-build}" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "reps must be a positive integer" >&2; exit 2; }

udp=$b/bench/udp/udp_bench
lnk=$b/bench/udp/link_bench
mcp=$b/bench/memcpy/memcpy_bench
for f in "$udp" "$mcp" "$b/lib/libibverbs.so.1"; do
	[[ -e $f ]] || { echo "missing $f (build it first)" >&2; exit 2; }
done
for t in ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat \
	 ib_write_bw ib_read_bw ib_send_bw; do
	command -v $t >/dev/null || { echo "missing $t (perftest)" >&2; exit 2; }
done

out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-bench.XXXXXX)}
mkdir -p "$out/raw"
res=$out/results.txt		# "round name value unit"
facts=$out/facts.txt		# "key<TAB>value"
: >"$res"
: >"$facts"

fact() { printf '%s\t%s\n' "$1" "$2" >>"$facts"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

fact command "bench/run.sh $orig"
fact date "$(date -u '+%Y-%m-%d %H:%M UTC')"
fact commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?)"
fact lib_built "$(date -u -r "$b/lib/libibverbs.so.1" '+%H:%M UTC')"
fact build_type "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$b/CMakeCache.txt" 2>/dev/null)"
fact nproc "$(nproc)"
fact kernel "$(uname -r)"
fact cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
fact perftest "$(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo ?)"
fact load_start "$(load)"

export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# these are the wire's figures: keep the pairs off the same-host rings
# (bench/samehost.sh measures those)
export UROCE_LINK=udp

# rec ROUND PREFIX < "name value unit" lines
rec() {
	local r=$1 p=$2 n v u
	while read -r n v u; do
		[[ $v =~ ^[0-9.]+$ ]] && echo "$r $p$n $v $u" >>"$res"
	done
}

# pt ROUND TAG ENV BINARY ARGS...   (ENV: "" or one VAR=value)
# Server first, then the client on 127.0.0.1 (retried while the server is
# not listening yet); the client's result row is recorded:
#   lat: <tag>_typ and <tag>_p99 in us (columns 5 and 8);
#   bw:  <tag>_bw in GB/s (BW average in Gb/s / 8).
pt() {
	local r=$1 tag=$2 env=$3 bin=$4
	shift 4
	local port so co sp rc rs row ev=()
	[[ -n $env ]] && ev=("$env")
	so=$out/raw/$tag.$r.srv
	co=$out/raw/$tag.$r.cli
	for _ in 1 2 3; do
		port=$((20000 + RANDOM % 20000))
		env "${ev[@]}" timeout 60 "$bin" -d uroce0 -x 0 -F -p "$port" "$@" \
			>"$so" 2>&1 &
		sp=$!
		sleep 0.3
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			env "${ev[@]}" timeout 60 "$bin" -d uroce0 -x 0 -F -p "$port" \
				"$@" 127.0.0.1 >"$co" 2>&1
			rc=$?
			grep -qiE "couldn't connect|connection refused|unable to connect" \
				"$co" || break
			sleep 0.3
		done
		wait "$sp"
		rs=$?
		# retry only a failure to set up (port taken, server not up)
		grep -qiE "couldn't (connect|bind|listen)|address already in use" \
			"$so" "$co" || break
		sleep 0.5
	done
	row=$(grep -E '^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' "$co" | tail -1)
	if ((rc != 0 || rs != 0)) || [[ -z $row ]]; then
		echo "$r ${tag}_fail 1 count" >>"$res"
		echo "  $tag: FAILED (server rc=$rs, client rc=$rc; $co)" >&2
		return
	fi
	case $bin in
	*_lat) awk -v r="$r" -v t="$tag" '{
		printf "%s %s_typ %s us\n%s %s_p99 %s us\n", r, t, $5, r, t, $8 }' \
		<<<"$row" >>"$res" ;;
	*_bw) awk -v r="$r" -v t="$tag" '{
		printf "%s %s_bw %.4f GB/s\n", r, t, $4 / 8 }' \
		<<<"$row" >>"$res" ;;
	esac
}

lat_args=(-s 64 -n 5000)
bw_args=(-s 65536 -n 5000 --report_gbits)

for ((r = 1; r <= reps; r++)); do
	echo "round $r/$reps (load $(load))" >&2
	timeout 30 "$udp" lat -n 20000 -t 1 | tee "$out/raw/udp_lat.$r" | rec "$r" ""
	if [[ -x $lnk ]]; then
		timeout 30 "$lnk" lat -n 20000 -t 1 | tee "$out/raw/link_lat.$r" |
			rec "$r" ""
	fi
	pt "$r" write_lat_block "" ib_write_lat "${lat_args[@]}"
	pt "$r" send_lat_block "" ib_send_lat "${lat_args[@]}"
	pt "$r" read_lat_block "" ib_read_lat "${lat_args[@]}"
	pt "$r" atomic_lat_block "" ib_atomic_lat -n 5000
	timeout 60 "$udp" tput -t 1 -r 1 | tee "$out/raw/udp_tput.$r" | rec "$r" ""
	timeout 30 "$mcp" -t 0.5 -r 5 | tee "$out/raw/memcpy.$r" | rec "$r" ""
	pt "$r" write_bw "" ib_write_bw "${bw_args[@]}"
	pt "$r" read_bw "" ib_read_bw "${bw_args[@]}"
	pt "$r" send_bw "" ib_send_bw "${bw_args[@]}"
	pt "$r" write_lat_busy UROCE_BUSY_POLL=1 ib_write_lat "${lat_args[@]}"
	pt "$r" send_lat_busy UROCE_BUSY_POLL=1 ib_send_lat "${lat_args[@]}"
done
fact load_end "$(load)"

args=("$res" "$facts")
((write)) && args+=(--write "$repo/docs/benchmarks.md")
python3 "$here/report.py" "${args[@]}"
echo "raw outputs: $out" >&2
