#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# perftest over uroce next to UCX and libfabric over TCP and this
# machine's own limits, in one run (docs/benchmarks.md, "perftest over
# uroce"). Builds nothing:
#
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build
#   bench/run.sh [--write] [build-dir] [reps]
#
# build-dir defaults to ./build, reps to 3; 3 reps take 7 to 10 minutes
# on a 2-core machine at load 12-17 (2 to 3 minutes a round). All uroce
# pairs run with UROCE_LINK=udp (the wire's figures: bench/samehost.sh
# measures the same-host path). Every round runs all of these, in this
# order, so that load drift on a shared machine hits all alike:
#   raw UDP 64 B ping-pong, blocking and busy [udp_bench lat -n 20000 -t 1],
#     the same through link/ [link_bench], and in each process a
#     spinning main thread fed by a receiving thread [udp_bench relay]
#     (the shape of ib_write_lat over uroce);
#   UCX over TCP [ucx_perftest -x tcp -d lo]: am_lat -s 64 -n 20000;
#   libfabric [fi_pingpong -S 64 -I 2000]: tcp (-e rdm, tcp;ofi_rxm) and
#     udp (-e dgram);
#   perftest latency, default (blocking) mode [-s 64 -n 5000]: ib_write_lat,
#     ib_send_lat, ib_read_lat, ib_atomic_lat (-n 5000, 8 B);
#   raw UDP 4 KiB throughput [udp_bench tput -t 1 -r 1], memcpy 64 KiB and
#     1 MiB [memcpy_bench -t 0.5 -r 5];
#   perftest bandwidth [-s 65536 -n 5000 --report_gbits]: ib_write_bw (with
#     its CPU time), ib_read_bw, ib_send_bw; ib_write_bw -s 1048576 -n 1000;
#   UCX over TCP put_bw, zcopy: -s 65536 -n 2000 (with its CPU time) and
#     -s 1048576 -n 500;
#   message rate: ib_write_bw -s 64 -l 16 -n 200000;
#   QPs: ib_write_bw -s 65536 -q 4/16/64 with -n 5000/q (the same bytes as
#     the -q 1 row above);
#   pairs: ib_write_bw -s 65536 -D 3 -f 1, one pair, two at once, one
#     pair again (the baseline is the mean of the two single runs);
#   threads: threads_bench -T 1/2/4/8 -s 4096 -w 16 -t 2 (one process, T
#     threads, each with its own RC QP pair in that process, every byte
#     checked);
#   perftest latency with UROCE_BUSY_POLL=1: ib_write_lat, ib_send_lat;
#   between two network namespaces joined by a veth pair (MTU 9000, so
#     that uroce's packets are 4 KiB as on lo; BENCH_NS_MTU=1500 gives
#     1 KiB ones; needs root and ip netns, skipped loudly otherwise):
#     ib_write_lat, ib_send_lat, ib_write_bw 64 KiB, UCX am_lat and put_bw
#     64 KiB, with the same flags as above.
# CPU time is each process's user + system time from /usr/bin/time (both
# sides of a pair, and the target's alone: the perftest or ucx_perftest
# server), per GB moved (iterations x size), over the whole run and over
# the moving alone: the same pair run with -n 10 gives the start-up and
# teardown's CPU, which is subtracted.
# Then bench/report.py takes the medians over the rounds and the ratios to
# the baselines of the same round, prints markdown and, with --write, puts
# it between the markers of docs/benchmarks.md. Raw outputs stay in the
# directory printed at the end (BENCH_OUT to choose it).
# Every program runs under a timeout; a failed run is left out and counted.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/ab_lib.sh
. "$here/ab_lib.sh"	# ucx_pair, fi_pair, load
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
thr=$b/bench/threads/threads_bench
for f in "$udp" "$mcp" "$thr" "$b/lib/libibverbs.so.1"; do
	[[ -e $f ]] || { echo "missing $f (build it first)" >&2; exit 2; }
done
for t in ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat \
	 ib_write_bw ib_read_bw ib_send_bw ucx_perftest fi_pingpong \
	 /usr/bin/time python3; do
	command -v $t >/dev/null || { echo "missing $t (scripts/install-deps.sh)" >&2; exit 2; }
done

out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-bench.XXXXXX)}
mkdir -p "$out/raw"
res=$out/results.txt		# "round name value unit"
facts=$out/facts.txt		# "key<TAB>value"
: >"$res"
: >"$facts"

fact() { printf '%s\t%s\n' "$1" "$2" >>"$facts"; }

start=$(date +%s)
fact command "bench/run.sh $orig"
fact date "$(date -u '+%Y-%m-%d %H:%M UTC')"
fact commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?)"
fact lib_built "$(date -u -r "$b/lib/libibverbs.so.1" '+%H:%M UTC')"
fact build_type "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$b/CMakeCache.txt" 2>/dev/null)"
fact nproc "$(nproc)"
fact kernel "$(uname -r)"
fact cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
fact perftest "$(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo ?)"
fact ucx "$(dpkg-query -W -f '${Version}' ucx-utils 2>/dev/null || echo ?)"
fact libfabric "$(dpkg-query -W -f '${Version}' libfabric-bin 2>/dev/null || echo ?)"
fact load_start "$(load)"

export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# these are the wire's figures: keep the pairs off the same-host rings
# (bench/samehost.sh measures those)
export UROCE_LINK=udp

# Where the peers run (bench/ab_lib.sh): on 127.0.0.1 unless ns_on puts
# the server in namespace A and the client in namespace B.
srv_pre=() cli_pre=() peer_host=127.0.0.1 ns=
ns_mtu=${BENCH_NS_MTU:-9000}
ns_up() {
	ns=urbench$$
	ip netns add "${ns}a" && ip netns add "${ns}b" &&
	ip link add "${ns}x" type veth peer name "${ns}y" &&
	ip link set "${ns}x" netns "${ns}a" && ip link set "${ns}y" netns "${ns}b" &&
	ip -n "${ns}a" link set "${ns}x" name urv0 &&
	ip -n "${ns}b" link set "${ns}y" name urv0 &&
	ip -n "${ns}a" addr add 198.18.0.1/24 dev urv0 &&
	ip -n "${ns}b" addr add 198.18.0.2/24 dev urv0 &&
	ip -n "${ns}a" link set urv0 mtu "$ns_mtu" up &&
	ip -n "${ns}b" link set urv0 mtu "$ns_mtu" up &&
	ip -n "${ns}a" link set lo up && ip -n "${ns}b" link set lo up
}
ns_down() {
	[[ -n $ns ]] || return 0
	ip netns del "${ns}a" 2>/dev/null
	ip netns del "${ns}b" 2>/dev/null
	ns=
}
trap ns_down EXIT
ns_on() {
	srv_pre=(ip netns exec "${ns}a" env UROCE_ADDRS=198.18.0.1)
	cli_pre=(ip netns exec "${ns}b" env UROCE_ADDRS=198.18.0.2)
	peer_host=198.18.0.1
}
ns_off() { srv_pre=() cli_pre=() peer_host=127.0.0.1; }
netns=0
if ((EUID != 0)) || ! command -v ip >/dev/null; then
	echo "SKIPPED: the network-namespace rows (need root and ip netns)" >&2
	fact netns "skipped: needs root and ip netns"
elif ns_up; then
	netns=1
	fact netns "veth pair between two namespaces, MTU $ns_mtu, 198.18.0.1 (server) and .2 (client)"
else
	ns_down
	echo "SKIPPED: the network-namespace rows (could not create them)" >&2
	fact netns "skipped: could not create the namespaces"
fi

# rec ROUND PREFIX < "name value unit" lines
rec() {
	local r=$1 p=$2 n v u
	while read -r n v u; do
		[[ $v =~ ^[0-9.]+$ ]] && echo "$r $p$n $v $u" >>"$res"
	done
}

# cpu_rec ROUND TAG SRV_TIME CLI_TIME BYTES: from /usr/bin/time's "user
# system" of both sides, <tag>_cpu_both and <tag>_cpu_target (the
# server's) in s per GB moved
cpu_rec() {
	local r=$1 tag=$2 s c
	s=$(tail -n 1 "$3" 2>/dev/null) c=$(tail -n 1 "$4" 2>/dev/null)
	awk -v r="$r" -v t="$tag" -v s="$s" -v c="$c" -v by="$5" 'BEGIN {
		split(s, a, " "); split(c, b, " ");
		if (a[1] !~ /^[0-9.]+$/ || b[1] !~ /^[0-9.]+$/) exit;
		gb = by / 1e9;
		printf "%s %s_cpu_both %.4f s/GB\n", r, t, (a[1] + a[2] + b[1] + b[2]) / gb;
		printf "%s %s_cpu_target %.4f s/GB\n", r, t, (a[1] + a[2]) / gb;
		printf "%s %s_cpu_srv_s %.4f s\n", r, t, a[1] + a[2];
		printf "%s %s_cpu_cli_s %.4f s\n", r, t, b[1] + b[2];
		printf "%s %s_cpu_gb %.6f GB\n", r, t, gb }' >>"$res"
}

# pt ROUND TAG ENV BINARY ARGS...   (ENV: "" or one VAR=value)
# Server first, then the client (retried while the server is not
# listening yet); the client's result row is recorded:
#   lat: <tag>_typ, <tag>_avg and <tag>_p99 in us (columns 5, 6 and 8);
#   bw:  <tag>_bw in GB/s (BW average in Gb/s / 8), or with -l (message
#        rate) <tag>_mrate in M/s (column 5).
# With cpu_bytes set (the bytes the run moves), both sides run under
# /usr/bin/time and cpu_rec records their CPU per GB.
cpu_bytes=
pt() {
	local r=$1 tag=$2 env=$3 bin=$4
	shift 4
	local port so co sp rc rs row ev=() st=() ct=()
	[[ -n $env ]] && ev=("$env")
	so=$out/raw/$tag.$r.srv
	co=$out/raw/$tag.$r.cli
	if [[ -n $cpu_bytes ]]; then
		st=(/usr/bin/time -f '%U %S' -o "$so.time")
		ct=(/usr/bin/time -f '%U %S' -o "$co.time")
	fi
	for _ in 1 2 3; do
		port=$((20000 + RANDOM % 20000))
		${srv_pre[@]+"${srv_pre[@]}"} env "${ev[@]}" ${st[@]+"${st[@]}"} \
			timeout 60 "$bin" -d uroce0 -x 0 -F -p "$port" "$@" \
			>"$so" 2>&1 &
		sp=$!
		sleep 0.3
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			${cli_pre[@]+"${cli_pre[@]}"} env "${ev[@]}" \
				${ct[@]+"${ct[@]}"} timeout 60 "$bin" -d uroce0 \
				-x 0 -F -p "$port" "$@" "$peer_host" >"$co" 2>&1
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
		printf "%s %s_typ %s us\n%s %s_avg %s us\n%s %s_p99 %s us\n",
			r, t, $5, r, t, $6, r, t, $8 }' <<<"$row" >>"$res" ;;
	*_bw)
		if [[ " $* " == *" -l "* ]]; then
			awk -v r="$r" -v t="$tag" '{
			printf "%s %s_mrate %s M/s\n", r, t, $5 }' <<<"$row" >>"$res"
		else
			awk -v r="$r" -v t="$tag" '{
			printf "%s %s_bw %.4f GB/s\n", r, t, $4 / 8 }' <<<"$row" >>"$res"
		fi ;;
	esac
	[[ -n $cpu_bytes ]] && cpu_rec "$r" "$tag" "$so.time" "$co.time" "$cpu_bytes"
}

# ucx ROUND TAG TEST SIZE ITERS [LAYOUT]: one ucx_perftest pair over UCT
# tcp on lo (or the veth, with ns_on); lat: <tag>_typ (the 50th
# percentile, us); bw: <tag>_bw (the overall average, MB/s / 1000). With
# cpu_bytes set, its CPU per GB as in pt.
ucx() {
	local r=$1 tag=$2 t=$3 s=$4 n=$5 layout=${6:-} f=$out/raw/$2.$1 dev=lo
	local sv=("${srv_pre[@]}") cv=("${cli_pre[@]}") l=()
	# (the veth has one name in both namespaces: the server takes the
	# client's device name)
	[[ $peer_host != 127.0.0.1 ]] && dev=urv0
	[[ -n $layout ]] && l=(-D "$layout")
	if [[ -n $cpu_bytes ]]; then
		srv_pre+=(/usr/bin/time -f '%U %S' -o "$f.srv.time")
		cli_pre+=(/usr/bin/time -f '%U %S' -o "$f.time")
	fi
	UCX_TLS=tcp ucx_pair "$f" -x tcp -d "$dev" -t "$t" -s "$s" "${l[@]}" \
		-n "$n" -w 100
	srv_pre=("${sv[@]}") cli_pre=("${cv[@]}")
	awk -v r="$r" -v tag="$tag" -v t="$t" '/^Final:/ {
		if (t ~ /lat$/) printf "%s %s_typ %s us\n", r, tag, $3;
		else printf "%s %s_bw %.4f GB/s\n", r, tag, $7 / 1000 }' "$f" >"$f.row"
	if [[ -s $f.row ]]; then
		cat "$f.row" >>"$res"
		[[ -n $cpu_bytes ]] && cpu_rec "$r" "$tag" "$f.srv.time" "$f.time" "$cpu_bytes"
	else
		echo "$r ${tag}_fail 1 count" >>"$res"
		echo "  $tag: FAILED ($f)" >&2
	fi
}

# fab ROUND PROVIDER ENDPOINT: fi_pingpong 64 B; fi_<prov>_typ is its mean
# half round trip (it prints no median)
fab() {
	local r=$1 f=$out/raw/fi_$2.$1 v
	fi_pair "$f" -p "$2" -e "$3" -I 2000 -S 64
	v=$(fi_usec "$f")
	if [[ -n $v ]]; then
		echo "$r fi_$2_typ $v us" >>"$res"
	else
		echo "$r fi_$2_fail 1 count" >>"$res"
		echo "  fi_$2: FAILED ($f)" >&2
	fi
}

# two ROUND TAG ARGS...: two ib_write_bw pairs at once on 127.0.0.1 (both
# servers up first, then both clients); <tag>_bw is their sum, recorded
# only when both succeed
two() {
	local r=$1 tag=$2 p1=$((20000 + RANDOM % 10000)) i rc=0 v sum=0
	local pids=()
	shift 2
	for i in 0 1; do
		timeout 60 ib_write_bw -d uroce0 -x 0 -F -p $((p1 + 10000 * i)) "$@" \
			>"$out/raw/$tag.$r.$i.srv" 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	for i in 0 1; do
		timeout 60 ib_write_bw -d uroce0 -x 0 -F -p $((p1 + 10000 * i)) "$@" \
			127.0.0.1 >"$out/raw/$tag.$r.$i.cli" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || rc=1
	done
	for i in 0 1; do
		v=$(grep -E '^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' \
			"$out/raw/$tag.$r.$i.cli" | tail -1 | awk '{ print $4 / 8 }')
		[[ -n $v ]] || rc=1
		sum=$(awk -v a="$sum" -v b="${v:-0}" 'BEGIN { print a + b }')
	done
	if ((rc)); then
		echo "$r ${tag}_fail 1 count" >>"$res"
		echo "  $tag: FAILED ($out/raw/$tag.$r.*)" >&2
	else
		echo "$r ${tag}_bw $sum GB/s" >>"$res"
	fi
}

lat_args=(-s 64 -n 5000)
bw_args=(-s 65536 -n 5000 --report_gbits)
dur_args=(-s 65536 -D 3 -f 1 --report_gbits)

for ((r = 1; r <= reps; r++)); do
	echo "round $r/$reps (load $(load))" >&2
	timeout 30 "$udp" lat -n 20000 -t 1 | tee "$out/raw/udp_lat.$r" | rec "$r" ""
	timeout 60 "$udp" relay -n 20000 -t 1 | tee "$out/raw/udp_relay.$r" |
		rec "$r" ""
	if [[ -x $lnk ]]; then
		timeout 30 "$lnk" lat -n 20000 -t 1 | tee "$out/raw/link_lat.$r" |
			rec "$r" ""
	fi
	ucx "$r" ucx_am_lat am_lat 64 20000
	fab "$r" tcp rdm
	fab "$r" udp dgram
	pt "$r" write_lat_block "" ib_write_lat "${lat_args[@]}"
	pt "$r" send_lat_block "" ib_send_lat "${lat_args[@]}"
	pt "$r" read_lat_block "" ib_read_lat "${lat_args[@]}"
	pt "$r" atomic_lat_block "" ib_atomic_lat -n 5000
	timeout 60 "$udp" tput -t 1 -r 1 | tee "$out/raw/udp_tput.$r" | rec "$r" ""
	timeout 30 "$mcp" -t 0.5 -r 5 | tee "$out/raw/memcpy.$r" | rec "$r" ""
	cpu_bytes=$((5000 * 65536))
	pt "$r" write_bw "" ib_write_bw "${bw_args[@]}"
	# the same pair moving 10 messages: its CPU is start-up and teardown,
	# which report.py subtracts for the CPU of moving the bytes
	cpu_bytes=$((10 * 65536))
	pt "$r" write_bw_setup "" ib_write_bw -s 65536 -n 10 --report_gbits
	cpu_bytes=
	pt "$r" read_bw "" ib_read_bw "${bw_args[@]}"
	pt "$r" send_bw "" ib_send_bw "${bw_args[@]}"
	pt "$r" write_bw_1m "" ib_write_bw -s 1048576 -n 1000 --report_gbits
	cpu_bytes=$((2000 * 65536))
	ucx "$r" ucx_put_bw put_bw 65536 2000 zcopy
	cpu_bytes=$((10 * 65536))
	ucx "$r" ucx_put_bw_setup put_bw 65536 10 zcopy
	cpu_bytes=
	ucx "$r" ucx_put_bw_1m put_bw 1048576 500 zcopy
	pt "$r" msg_rate "" ib_write_bw -s 64 -l 16 -n 200000
	for q in 4 16 64; do
		pt "$r" write_bw_q$q "" ib_write_bw -s 65536 -q $q \
			-n $(((5000 + q - 1) / q)) --report_gbits
	done
	pt "$r" pair1 "" ib_write_bw "${dur_args[@]}"
	two "$r" pair2 "${dur_args[@]}"
	pt "$r" pair1b "" ib_write_bw "${dur_args[@]}"
	for t in 1 2 4 8; do
		if ! timeout 60 "$thr" -T $t -s 4096 -w 16 -t 2 \
			>"$out/raw/threads_$t.$r" 2>"$out/raw/threads_$t.$r.err"; then
			echo "$r threads_${t}_fail 1 count" >>"$res"
			echo "  threads T=$t: FAILED ($out/raw/threads_$t.$r.err)" >&2
		fi
		rec "$r" "" <"$out/raw/threads_$t.$r"
	done
	pt "$r" write_lat_busy UROCE_BUSY_POLL=1 ib_write_lat "${lat_args[@]}"
	pt "$r" send_lat_busy UROCE_BUSY_POLL=1 ib_send_lat "${lat_args[@]}"
	if ((netns)); then
		ns_on
		pt "$r" ns_write_lat "" ib_write_lat "${lat_args[@]}"
		pt "$r" ns_send_lat "" ib_send_lat "${lat_args[@]}"
		pt "$r" ns_write_bw "" ib_write_bw "${bw_args[@]}"
		ucx "$r" ns_ucx_am_lat am_lat 64 20000
		ucx "$r" ns_ucx_put_bw put_bw 65536 2000 zcopy
		ns_off
	fi
done
ns_down
fact load_end "$(load)"
fact duration "$(($(date +%s) - start)) s"

args=("$res" "$facts")
((write)) && args+=(--write "$repo/docs/benchmarks.md")
python3 "$here/report.py" "${args[@]}"
echo "raw outputs: $out" >&2
