# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Shared by the A/B scripts (bench/memguard_ab.sh, bench/poll_yield_ab.sh),
# bench/loss.sh (median, ratio, load), the same-host benchmarks
# (bench/samehost.sh, bench/sizes.sh) and bench/run.sh (UCX and libfabric
# pairs): sourced, not run.

# ab_pair SRV_OUT CLI_OUT BINARY ARGS...: one perftest pair on 127.0.0.1,
# both run under the command prefix in the array ab_pre (the caller's
# environment, library, CPU pinning); prints the figure (bw: Gb/s average;
# lat: t_typical in us) or "fail". The client retries while the server is
# not listening yet; each side gets ab_timeout seconds (default 120).
# (CPU time is no measure here: perftest spins while it waits.)
# shellcheck disable=SC2154 # ab_pre: the caller's, by design
ab_pair() {
	local so=$1 co=$2 bin=$3
	shift 3
	local port=$((20000 + RANDOM % 20000)) sp rc rs row

	"${ab_pre[@]}" timeout "${ab_timeout:-120}" "$bin" -d uroce0 -p "$port" "$@" >"$so" 2>&1 &
	sp=$!
	sleep 0.4
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		"${ab_pre[@]}" timeout "${ab_timeout:-120}" "$bin" -d uroce0 -p "$port" "$@" \
			127.0.0.1 >"$co" 2>&1
		rc=$?
		grep -qiE "couldn't connect|connection refused|unable to connect" \
			"$co" || break
		sleep 0.3
	done
	wait "$sp"
	rs=$?
	row=$(grep -E '^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' "$co" | tail -1)
	if ((rc || rs)) || [[ -z $row ]]; then
		echo fail
	elif [[ $bin == *_bw ]]; then
		awk '{ print $4 }' <<<"$row"
	else
		awk '{ print $5 }' <<<"$row"	# t_typical
	fi
}

# Where the peers of ucx_pair and fi_pair run: the arrays srv_pre and
# cli_pre (empty by default) go before the server's and the client's
# command (a network namespace, /usr/bin/time), and the client connects
# to peer_host (default 127.0.0.1).
# shellcheck disable=SC2154 # srv_pre, cli_pre, peer_host: the caller's
_peer_run() {
	local side=$1
	shift
	if [[ $side == srv ]]; then
		${srv_pre[@]+"${srv_pre[@]}"} "$@"
	else
		${cli_pre[@]+"${cli_pre[@]}"} "$@"
	fi
}

# ucx_pair OUT ARGS...: one ucx_perftest pair, the client run with ARGS
# and its output in OUT (the server's in OUT.srv); the caller reads the
# figures from OUT's "Final:" line.
ucx_pair() {
	local out=$1 port=$((20000 + RANDOM % 20000))
	shift
	_peer_run srv timeout 60 ucx_perftest -p "$port" >"$out.srv" 2>&1 &
	sleep 0.4
	_peer_run cli timeout 60 ucx_perftest "${peer_host:-127.0.0.1}" \
		-p "$port" "$@" >"$out" 2>&1
	wait
}

# fi_pair OUT ARGS...: one fi_pingpong pair (libfabric), both sides run
# with ARGS, the client's output in OUT (the server's in OUT.srv); then
# fi_usec OUT prints its usec/xfer (the mean half round trip), or nothing
# when the run failed.
fi_pair() {
	local out=$1 port=$((20000 + RANDOM % 20000))
	shift
	_peer_run srv timeout 60 fi_pingpong "$@" -B "$port" >"$out.srv" 2>&1 &
	sleep 0.4
	_peer_run cli timeout 60 fi_pingpong "$@" -P "$port" \
		"${peer_host:-127.0.0.1}" >"$out" 2>&1
	wait
}
fi_usec() {
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	awk '$1 ~ /^[0-9]+[kmg]?$/ && NF == 8 { print $7 }' "$1" | tail -1
}

# median [DIGITS]: the median of the numeric words on stdin ("-" when there
# are none); the mean of the middle two has DIGITS significant digits
# (default 4)
median() {
	tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g |
		awk -v d="${1:-4}" '{ v[NR] = $1 } END {
			if (!NR) { print "-"; exit }
			if (NR % 2) print v[(NR + 1) / 2];
			else printf "%." d "g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B [DECIMALS]: A / B with DECIMALS decimals (default 3), "-" when
# either is not a number or B is 0
ratio() {
	awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN {
		if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%." d "f", a / b;
		else print "-" }'
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
