#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The loopback tour: unmodified ibv_rc_pingpong, then perftest latency and
# bandwidth for send, write, read and atomic, two processes on this host,
# each talking RoCEv2 through uroce (over the same-host rings, the default;
# UROCE_LINK=udp in the environment puts them on UDP). Prints a short table.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
export LD_LIBRARY_PATH=$PWD/$B/lib
T=$(mktemp -d /tmp/uroce-demo.XXXXXX)
trap 'rm -rf "$T"' EXIT

pair() {	# pair OUT "cmd": server in background, client to 127.0.0.1
	local out=$1 cmd=$2 port=$((20000 + RANDOM % 20000))
	timeout 60 bash -c "$cmd -p $port" >"$out.srv" 2>&1 &
	sleep 0.3
	timeout 60 bash -c "$cmd -p $port 127.0.0.1" >"$out" 2>&1
	local rc=$?
	wait $!
	return $rc
}

if [[ ${UROCE_LINK:-auto} == udp ]]; then
	echo "uroce demo: two unmodified processes on one host, RoCEv2 over UDP 4791"
else
	echo "uroce demo: two unmodified processes on one host, RoCEv2 packets through"
	echo "shared-memory rings (UROCE_LINK=udp: over UDP 4791, as to another host)"
fi
echo
ibv_devices
echo
echo "--- ibv_rc_pingpong -g 0 -s 4096 -n 1000"
if pair "$T/pp" "ibv_rc_pingpong -d uroce0 -g 0 -s 4096 -n 1000"; then
	grep -E "bytes in|iters in" "$T/pp"
else
	echo "ibv_rc_pingpong failed:"; tail -5 "$T/pp"
fi
echo
printf "%-14s %10s   %-14s %12s\n" test "lat [us]" test "BW [MB/s]"
printf "%-14s %10s   %-14s %12s\n" "(64 B, typ.)" "" "(64 KiB, avg)" ""
for t in send write read atomic; do
	lat=n/a bw=n/a
	if pair "$T/lat" "ib_${t}_lat -d uroce0 -x 0 -F -n 2000"; then
		lat=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {v=$5} END {print v}' "$T/lat")
	fi
	sz="-s 65536"
	[[ $t == atomic ]] && sz=""
	if pair "$T/bw" "ib_${t}_bw -d uroce0 -x 0 -F -n 2000 $sz"; then
		bw=$(awk '$1 ~ /^[0-9]+$/ && NF >= 4 {v=$4} END {print v}' "$T/bw")
	fi
	[[ $t == atomic ]] && bwname="ib_atomic_bw(8B)" || bwname="ib_${t}_bw"
	printf "%-14s %10s   %-14s %12s\n" "ib_${t}_lat" "${lat:-n/a}" "$bwname" "${bw:-n/a}"
done
echo
echo "Run your own: tools/uroce run -- <program>   (see README)"
