#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Sharing a bottleneck, measured on `uroce cluster` (docs/cluster.md,
# docs/benchmarks.md "A cluster in one box"), as root:
#
#   bench/cluster.sh [build-dir] [rounds]
#
# Every link 1 Gbit/s with a 48 000-byte tbf queue at both ends
# (BENCH_RATE, BENCH_QUEUE, BENCH_MTUS="1500 9000" to change them), 5 s
# flows (BENCH_SECS) of ib_write_bw -s 65536 over uroce and of iperf3 (TCP)
# into one receiving host, whose switch port is the bottleneck:
#
#   uroce       one uroce flow          tcp        one TCP flow
#   uroce2      two uroce flows         tcp2       two TCP flows
#   mixed       one uroce and one TCP flow
#   incast3     three uroce flows       tcp3       three TCP flows
#
# (BENCH_CASES="uroce incast8 tcp8" chooses; incastN and tcpN are N
# senders; BENCH_FAULT=SPEC gives every uroce program that UROCE_FAULT,
# e.g. ce=0.01 to have the hosts mark CE; BENCH_LIBS="new=build main=../x/build"
# runs every case with uroce flows once per library build instead of
# build-dir's, in the same round, as rows "CASE, NAME": an A/B
# interleaved), each scenario a fresh cluster, all of them in each round
# (interleaved),
# then every flow's median Gbit/s over the rounds, the medians of their
# sum and of Jain's fairness index (sum^2 / (n * sum of squares), 1 for
# equal shares), the drops of the bottleneck's queue, and the uroce
# senders' retransmissions and timeouts (UROCE_STATS). A run that fails
# (perftest's status, e.g. RETRY_EXC, or a timeout) is shown as such.
# Prints markdown on stdout; the raw output stays in the directory named
# at the end (BENCH_OUT to choose it).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/ab_lib.sh
. "$here/ab_lib.sh"	# median, load
b=${1:-$repo/build}
rounds=${2:-3}
b=$(cd "$b" 2>/dev/null && pwd) || { echo "no build dir ${1:-build}" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive integer" >&2; exit 2; }
[[ -e $b/lib/libibverbs.so.1 ]] || { echo "missing $b/lib/libibverbs.so.1" >&2; exit 2; }
((EUID == 0)) || { echo "bench/cluster.sh: needs root (uroce cluster)" >&2; exit 2; }
for t in ib_write_bw iperf3 tc; do
	command -v $t >/dev/null || { echo "missing $t" >&2; exit 2; }
done
rate=${BENCH_RATE:-1gbit} queue=${BENCH_QUEUE:-48000} secs=${BENCH_SECS:-5}
mtus=${BENCH_MTUS:-1500}
export UROCE_LIBDIR=$b/lib
U=$repo/tools/uroce
out=${BENCH_OUT:-$(mktemp -d /tmp/uroce-cluster.XXXXXX)}
mkdir -p "$out"

# scenario flows: the kinds of its flows, "u" (uroce) or "t" (TCP), one
# per sending host; the receiver is the host after them
declare -A flows=([uroce]=u [tcp]=t [uroce2]="u u" [tcp2]="t t"
		  [mixed]="u t")
declare -A title=([uroce]="one uroce flow" [tcp]="one TCP flow"
		  [uroce2]="two uroce flows" [tcp2]="two TCP flows"
		  [mixed]="uroce + TCP")
read -ra order <<<"${BENCH_CASES:-uroce tcp uroce2 tcp2 mixed incast3 tcp3}"
for name in "${order[@]}"; do
	# incastN, tcpN: N senders of uroce or TCP
	if [[ -z ${flows[$name]:-} && $name =~ ^(incast|tcp)([1-9][0-9]?)$ ]] &&
	   ((BASH_REMATCH[2] < 64)); then
		k=${BASH_REMATCH[2]} f=u t=uroce
		[[ ${BASH_REMATCH[1]} == tcp ]] && f=t t=TCP
		flows[$name]=$(for ((j = 0; j < k; j++)); do printf '%s ' $f; done)
		title[$name]="$k-to-1, $t"
	fi
	[[ -n ${flows[$name]:-} ]] || { echo "BENCH_CASES: no case '$name'" >&2; exit 2; }
done
# BENCH_LIBS: each case with uroce flows once per build, "CASE@NAME"
declare -A libdir=()
if [[ -n ${BENCH_LIBS:-} ]]; then
	read -ra libs <<<"$BENCH_LIBS"
	ab=()
	for name in "${order[@]}"; do
		if [[ ${flows[$name]} != *u* ]]; then
			ab+=("$name")
			continue
		fi
		for l in "${libs[@]}"; do
			[[ $l =~ ^([A-Za-z0-9_-]+)=(.+)$ ]] ||
				{ echo "BENCH_LIBS: '$l' is not NAME=BUILD-DIR" >&2; exit 2; }
			d=$(cd "${BASH_REMATCH[2]}" 2>/dev/null && pwd)
			if [[ -z $d || ! -e $d/lib/libibverbs.so.1 ]]; then
				echo "BENCH_LIBS: no ${BASH_REMATCH[2]}/lib/libibverbs.so.1" >&2
				exit 2
			fi
			v=$name@${BASH_REMATCH[1]}
			flows[$v]=${flows[$name]}
			title[$v]="${title[$name]}, ${BASH_REMATCH[1]}"
			libdir[$v]=$d/lib
			ab+=("$v")
		done
	done
	order=("${ab[@]}")
fi

bw="ib_write_bw -d uroce0 -x 0 -F -s 65536 -D $secs --report_gbits"

# run_case NAME MTU ROUND: one scenario on a fresh cluster; its logs in
# $out/NAME.MTU.ROUND/
run_case() {
	local name=$1 mtu=$2 r=$3 k recv j port cmd rc
	local -a kinds args
	read -ra kinds <<<"${flows[$name]}"
	k=${#kinds[@]} recv=$k
	port=$((20000 + RANDOM % 20000))
	# the receiver: a server per flow, each uroce one on an address of
	# its own, then the bottleneck's drop count from the switch
	cmd="rc=0; pids=''"
	for ((j = 0; j < k; j++)); do
		if [[ ${kinds[j]} == u ]]; then
			cmd+="; UROCE_ADDRS=10.77.$j.$((recv + 1)) $bw -p $((port + j)) >/dev/null 2>&1 & pids=\"\$pids \$!\""
		else
			cmd+="; iperf3 -s -1 -p $((port + j)) >/dev/null 2>&1 & pids=\"\$pids \$!\""
		fi
	done
	cmd+="; for p in \$pids; do wait \$p || rc=1; done"
	cmd+="; ip netns exec \$UROCE_CLUSTER_NAME-sw tc -s qdisc show dev h$recv"
	cmd+="; grep '^Udp:' /proc/net/snmp"
	cmd+="; exit \$rc"
	args=(--host "$recv" "$cmd")
	for ((j = 0; j < k; j++)); do
		if [[ ${kinds[j]} == u ]]; then
			args+=(--host "$j" "sleep 1; UROCE_STATS=1 $bw -p $((port + j)) 10.77.0.$((recv + 1)) || exit; tc -s qdisc show dev eth0")
		else
			args+=(--host "$j" "sleep 1; iperf3 -c 10.77.0.$((recv + 1)) -p $((port + j)) -t $secs -f g || exit; tc -s qdisc show dev eth0")
		fi
	done
	mkdir -p "$out/$name.$mtu.$r"
	# (the receiver's servers each need an address of their own)
	UROCE_LIBDIR=${libdir[$name]:-$b/lib} \
	"$U" cluster -n $((k + 1)) --addrs $((k > 4 ? k : 4)) --rate "$rate" --queue "$queue" --mtu "$mtu" \
		${BENCH_FAULT:+--fault "$BENCH_FAULT"} \
		--timeout $((secs + 40)) --output "$out/$name.$mtu.$r" "${args[@]}" \
		2>"$out/$name.$mtu.$r/cluster.err"
	rc=$?
	echo "$rc" >"$out/$name.$mtu.$r/rc"
}

# flow_bw LOG KIND: a sender's Gbit/s, or why there is none
flow_bw() {
	local f=$1 v st
	if [[ $2 == u ]]; then
		v=$(awk '/^ *65536 +[0-9]+ +[0-9.]+ +[0-9.]+/ { print $4 }' "$f" | tail -n 1)
		if [[ -z $v ]]; then
			st=$(sed -n 's/.*Failed status \([0-9]*\).*/\1/p' "$f" | head -n 1)
			case $st in
			12) v=RETRY_EXC ;;
			"") v=fail ;;
			*) v=status_$st ;;
			esac
		fi
	else
		v=$(awk '/receiver/ { print $(NF - 2) }' "$f" | tail -n 1)
		[[ -n $v ]] || v=fail
	fi
	[[ ! $v =~ ^[0-9.]+$ ]] || v=$(awk -v v="$v" 'BEGIN { printf "%.3g", v }')
	echo "$v"
}

echo "cluster bench: $rounds rounds, MTU $mtus, raw output in $out (load $(load))" >&2
declare -A res
for mtu in $mtus; do
	for ((r = 1; r <= rounds; r++)); do
		for name in "${order[@]}"; do
			d=$out/$name.$mtu.$r
			# BENCH_REUSE=1 with BENCH_OUT: the table again from the runs
			# already there
			if [[ -z ${BENCH_REUSE:-} || ! -e $d/rc ]]; then
				echo "MTU $mtu round $r/$rounds: $name (load $(load))" >&2
				run_case "$name" "$mtu" "$r"
			fi
			read -ra kinds <<<"${flows[$name]}"
			vals=() retx=0 tmo=0 sdrops=0
			for ((j = 0; j < ${#kinds[@]}; j++)); do
				v=$(flow_bw "$d/h$j.0.log" "${kinds[j]}")
				res[$name,$mtu,$j,$r]=$v
				vals+=("$v")
				v=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' "$d/h$j.0.log" | head -n 1)
				sdrops=$((sdrops + ${v:-0}))
				if [[ ${kinds[j]} == u ]]; then
					v=$(awk '/^retransmits / { print $2 }' "$d/h$j.0.log" | tail -n 1)
					retx=$((retx + ${v:-0}))
					v=$(awk '/^timeouts / { print $2 }' "$d/h$j.0.log" | tail -n 1)
					tmo=$((tmo + ${v:-0}))
				fi
			done
			res[$name,$mtu,sum,$r]=$(printf '%s\n' "${vals[@]}" | awk '
				/^[0-9.]+$/ { s += $1; n++ } END { if (n) printf "%.3g", s; else print "-" }')
			res[$name,$mtu,jain,$r]=$(printf '%s\n' "${vals[@]}" | awk '
				!/^[0-9.]+$/ { bad = 1 } /^[0-9.]+$/ { s += $1; q += $1 * $1; n++ }
				END { if (bad || n < 2 || q == 0) print "-"; else printf "%.3f", s * s / (n * q) }')
			res[$name,$mtu,drops,$r]=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' \
				"$d/h${#kinds[@]}.0.log" | head -n 1)
			res[$name,$mtu,sdrops,$r]=$sdrops
			# Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors
			res[$name,$mtu,rcvbuf,$r]=$(awk '/^Udp: [0-9]/ { print $6 }' \
				"$d/h${#kinds[@]}.0.log" | head -n 1)
			res[$name,$mtu,retx,$r]=$retx
			res[$name,$mtu,tmo,$r]=$tmo
		done
	done
done

# med KEY: the median of every round's value ("-" if none is a number)
med() {
	local all="" r
	for ((r = 1; r <= rounds; r++)); do all+="${res[$1,$r]:--} "; done
	median 3 <<<"$all"
}

# rounds KEY: every round's value
each() {
	local all="" r
	for ((r = 1; r <= rounds; r++)); do all+="${res[$1,$r]:--} "; done
	echo "${all% }"
}

echo "## A cluster in one box"
echo
echo "\`bench/cluster.sh ${1:-build} $rounds\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
	"$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?)," \
	"$(nproc) cores, load $(load) at the end."
echo "Links $rate, a tbf queue of $queue bytes at both ends, ${secs} s flows of"
echo "\`ib_write_bw -s 65536\` (uroce) and \`iperf3\` (TCP) from one host each into"
echo "one receiving host; medians of $rounds rounds (the sum: each round's too)."
echo "Drops: at the bottleneck (the switch port to the receiver) and at the"
echo "senders' own links; uroce's: the senders' retransmissions and timeouts."
for mtu in $mtus; do
	echo
	echo "| MTU $mtu | each flow, Gbit/s | sum, Gbit/s (rounds) | Jain | drops: bottleneck, senders | uroce retransmits, timeouts |"
	echo "|---|---|---|---|---|---|"
	for name in "${order[@]}"; do
		read -ra kinds <<<"${flows[$name]}"
		fl=""
		for ((j = 0; j < ${#kinds[@]}; j++)); do
			fl+="${fl:+, }$(med "$name,$mtu,$j")"
		done
		sum="$(med "$name,$mtu,sum") ($(each "$name,$mtu,sum"))"
		jain=$(med "$name,$mtu,jain")
		((${#kinds[@]} > 1)) || jain=
		u="-"
		[[ ${flows[$name]} != *u* ]] || u="$(med "$name,$mtu,retx"), $(med "$name,$mtu,tmo")"
		echo "| ${title[$name]} | $fl | $sum | $jain | $(med "$name,$mtu,drops"), $(med "$name,$mtu,sdrops") | $u |"
	done
done
echo
echo "Raw output: $out" >&2
