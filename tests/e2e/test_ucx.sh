#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# UCX, unmodified Debian binaries (ucx-utils), under `uroce run`: ucx_info
# lists uroce0 with rc_verbs and ud_verbs (and does not without the
# interposer); ucx_perftest between two processes over loopback: UCT
# am_lat and put_bw (zcopy) on rc_verbs, am_lat on ud_verbs, UCP tag_bw
# over UCX_TLS=rc_verbs,ud_verbs and over ud_verbs alone, with UCX's
# default settings otherwise (ud_verbs' DGID check on). Small iteration
# counts: this checks function, not speed. About 30 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
if ! command -v ucx_perftest >/dev/null || ! command -v ucx_info >/dev/null; then
	echo "SKIP: ucx-utils not installed (scripts/install-deps.sh)"
	exit 77
fi
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$LIBDIR
export UCX_NET_DEVICES=uroce0:1

info_check() {	# NAME "uroce run options" want(1|0)
	local name=$1 opts=$2 want=$3 out="$E2E_TMP/$1.out" ok=1
	timeout 60 "$U" run $opts -- ucx_info -d >"$out" 2>&1 || ok=0
	if ((want)); then
		awk '/Memory domain: uroce0/{m=1} m&&/Transport: rc_verbs/{r=1}
		     m&&/Transport: ud_verbs/{u=1} END{exit !(r&&u)}' "$out" || ok=0
	else
		! grep -q "Memory domain: uroce0" "$out" || ok=0
	fi
	if ((ok)); then
		E2E_PASS=$((E2E_PASS + 1)); echo "PASS $name"
	else
		E2E_FAIL=$((E2E_FAIL + 1)); echo "FAIL $name"; tail -n 20 "$out"
	fi
}

info_check ucx_info_lists_uroce0 "" 1
info_check ucx_info_needs_interposer "--no-interpose" 0

perf() {	# NAME ITERATIONS "ucx_perftest args" [env...]
	local name=$1 n=$2 args=$3 p
	shift 3
	p=$(e2e_port)
	e2e_pair "$name" 90 \
		"env $* $U run -- ucx_perftest -p $p $args -n $n" \
		"env $* $U run -- ucx_perftest 127.0.0.1 -p $p $args -n $n" \
		"$(final_re "$n" "$args")"
}

# The Final row: iterations, latency typical/avg/overall, bandwidth
# avg/overall, message rate avg/overall. All iterations done, and a
# non-zero latency (latency tests) or bandwidth (bandwidth tests).
final_re() {	# ITERATIONS "args"
	if [[ $2 == *_lat* ]]; then
		echo "^Final: +$1 +[0-9.]*[1-9][0-9.]* "
	else
		echo "^Final: +$1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]*[1-9][0-9.]* "
	fi
}

perf uct_am_lat_rc 2000 "-x rc_verbs -d uroce0:1 -t am_lat"
perf uct_put_bw_zcopy_rc 500 "-x rc_verbs -d uroce0:1 -t put_bw -D zcopy -s 65536"
perf uct_am_lat_ud 2000 "-x ud_verbs -d uroce0:1 -t am_lat"
perf ucp_tag_bw_rc_ud 500 "-t tag_bw -s 65536" UCX_TLS=rc_verbs,ud_verbs
perf ucp_tag_lat_rc_ud 2000 "-t tag_lat" UCX_TLS=rc_verbs,ud_verbs
perf ucp_tag_bw_ud 500 "-t tag_bw -s 65536" UCX_TLS=ud_verbs
e2e_summary
