#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# qperf (Debian's qperf, unmodified) over uroce's librdmacm: `qperf -cm1`
# connects its RC QPs through rdma_cm (REQ/REP/RTU on QP1); every RC test
# runs for a second: SEND bandwidth one way and both ways, SEND latency,
# RDMA READ and WRITE bandwidth and latency, compare-and-swap and
# fetch-and-add rates. qperf checks no data, so the checks are: exit status
# 0, every test reports use_cm 1 and a positive result, the receiver of
# rc_bw got at least 1 MB, and UROCE_STATS shows the client's device sent
# packets. Not here: qperf's UC and UD tests, which ignore -cm1 and address
# the peer by LID with no GRH (qperf's own path), which no RoCE device
# accepts (EINVAL from ibv_modify_qp/ibv_create_ah, as on rxe and mlx5).
# About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v qperf >/dev/null || { echo "SKIP: qperf not installed (scripts/install-deps.sh)"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)
cd "$E2E_TMP"

TESTS="rc_bw rc_bi_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
	rc_rdma_write_bw rc_rdma_write_lat rc_compare_swap_mr rc_fetch_add_mr"
p=$(e2e_port)
srv=()
[[ -n ${E2E_PRELOAD:-} ]] && srv=(env "LD_PRELOAD=$E2E_PRELOAD")
timeout 180 "${srv[@]}" "$U" run -- qperf -lp "$p" >"$E2E_TMP/srv.out" 2>&1 &
sp=$!
sleep 0.5
# shellcheck disable=SC2086
UROCE_STATS=$E2E_TMP/stats timeout 150 "${srv[@]}" "$U" run -- \
	qperf -lp "$p" -cm1 127.0.0.1 -t 1 -vv $TESTS >"$E2E_TMP/cli.out" 2>&1
rc=$?
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null

if ((rc != 0)); then
	e2e_fail "qperf client (rc=$rc)"
	tail -n 20 "$E2E_TMP/cli.out" "$E2E_TMP/srv.out"
fi
# value TEST KEY: the number (and unit) qperf printed for KEY in TEST's
# section
value() {
	awk -v t="$1:" -v k="$2" '
		$0 == t { f = 1; next }
		/^[a-z_]+:$/ { f = 0 }
		f && $1 == k { gsub(",", "", $3); print $3, $4; exit }' "$E2E_TMP/cli.out"
}
for t in $TESTS; do
	case $t in
	*_bw) key=bw ;;
	*_lat) key=latency ;;
	*) key=msg_rate ;;
	esac
	v=$(value "$t" "$key")
	cm=$(value "$t" use_cm)
	if [[ ${cm% *} == 1 ]] && awk -v v="${v%% *}" 'BEGIN { exit !(v + 0 > 0) }'; then
		e2e_pass "qperf_$t ($key $v)"
	else
		e2e_fail "qperf_$t ($key '${v:-}', use_cm '${cm:-}')"
	fi
done
# rc_bw's receiver: "recv_bytes = 1.11 GB" (or "411 MiB")
rb=$(awk '$0 == "rc_bw:" { f = 1; next } /^[a-z_]+:$/ { f = 0 }
	f && $1 == "recv_bytes" { print $3, $4; exit }' "$E2E_TMP/cli.out")
if awk -v n="${rb% *}" -v u="${rb#* }" 'BEGIN {
	m = (u ~ /^G/) ? 1000 : (u ~ /^M/) ? 1 : 0; exit !(n * m >= 1) }'; then
	e2e_pass "qperf_rc_bw_received ($rb)"
else
	e2e_fail "qperf_rc_bw_received ('$rb')"
fi
if awk '$1 == "tx_pkts" && $2 > 1000 { ok = 1 } END { exit !ok }' "$E2E_TMP/stats" 2>/dev/null; then
	e2e_pass qperf_traffic_on_uroce
else
	e2e_fail qperf_traffic_on_uroce
	head -n 20 "$E2E_TMP/stats" 2>/dev/null
fi
e2e_summary
