#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Per-QP counters, live: while ib_write_bw runs with UROCE_FAULT dropping
# packets, `uroce stat PID` shows the client's RC QP with its peer, its
# counters rising and retransmits > 0, and the server's QP with sequence
# NAKs sent; the last QP lines each process published before its QP went
# agree with the totals it wrote to UROCE_STATS at exit (one data QP:
# nearly all of the traffic, never more). About 12 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest not installed"; exit 77; }
e2e_runtime_dir

# qp_val LINE KEY: the value after KEY on a qp/<dev> line (empty: none)
qp_val() {
	local -a w
	local i
	read -ra w <<<"$1"
	for ((i = 0; i + 1 < ${#w[@]}; i++)); do
		[[ ${w[i]} == "$2" ]] && { echo "${w[i + 1]}"; return; }
	done
}

# stat_val FILE NAME: a counter of a UROCE_STATS file
stat_val() {
	awk -v n="$2" '$1 == n { print $2; exit }' "$1"
}

# watch_qps PID OUT: until PID exits, keeps in OUT the last non-empty
# qp/uroce0 it published (its QP's final counts, at most 50 ms old)
watch_qps() {
	local f=$ROOT/$1/qp/uroce0 t
	while [[ -d /proc/$1 ]]; do
		t=$(cat "$f" 2>/dev/null) || t=
		[[ $t == *tx_pkts* ]] && printf '%s\n' "$t" >"$2"
		sleep 0.05
	done
}

p=$(e2e_port)
UROCE_FAULT=seed=3,drop=0.01 UROCE_STATS=$E2E_TMP/stats.srv \
	"$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 8 >"$E2E_TMP/srv" 2>&1 &
srv=$!
sleep 0.5
UROCE_FAULT=seed=4,drop=0.01 UROCE_STATS=$E2E_TMP/stats.cli \
	"$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 8 127.0.0.1 >"$E2E_TMP/cli" 2>&1 &
cli=$!
for _ in $(seq 50); do
	[[ -s $ROOT/$cli/qp/uroce0 && -s $ROOT/$srv/qp/uroce0 ]] && break
	sleep 0.1
done
watch_qps "$cli" "$E2E_TMP/last.cli" &
wc=$!
watch_qps "$srv" "$E2E_TMP/last.srv" &
ws=$!

# --- live: rising counters, retransmits, in `uroce stat` -----------------
sleep 1
"$U" stat "$cli" >"$E2E_TMP/stat1" 2>&1
sleep 1
"$U" stat "$cli" >"$E2E_TMP/stat2" 2>&1
"$U" stat "$srv" >"$E2E_TMP/stat.srv" 2>&1
# the counters line follows the QP's line: packets sent, on both reads
tx1=$(grep -A1 -E "^ +lqpn [0-9]+ type RC state RTS " "$E2E_TMP/stat1" | tail -1)
tx2=$(grep -A1 -E "^ +lqpn [0-9]+ type RC state RTS " "$E2E_TMP/stat2" | tail -1)
a=$(qp_val "$tx1" tx_pkts) b=$(qp_val "$tx2" tx_pkts)
if grep -qE "^ +lqpn [0-9]+ type RC state RTS rqpn [0-9]+ peer 127\.[0-9.]+ .* next-psn [0-9]+ unacked-psn [0-9]+" "$E2E_TMP/stat2" &&
   ((${a:-0} > 0 && ${b:-0} > a)); then
	e2e_pass stat_qp_live
else
	e2e_fail stat_qp_live "tx_pkts ${a:-none} then ${b:-none}: $(cat "$E2E_TMP/stat2")"
fi
r=$(qp_val "$tx2" retransmits)
((${r:-0} > 0)) && e2e_pass stat_qp_retransmits || e2e_fail stat_qp_retransmits "$tx2"
sl=$(grep -A1 -E "^ +lqpn [0-9]+ type RC state RT[RS] " "$E2E_TMP/stat.srv" | tail -1)
n=$(qp_val "$sl" seq_nak_sent) x=$(qp_val "$sl" rx_bytes)
((${n:-0} > 0 && ${x:-0} > 0)) && e2e_pass stat_qp_server ||
	e2e_fail stat_qp_server "$(cat "$E2E_TMP/stat.srv")"

wait "$srv"; rs=$?
wait "$cli"; rc=$?
wait "$wc" "$ws"
((rs == 0 && rc == 0)) && e2e_pass ib_write_bw_ran || e2e_fail ib_write_bw_ran "rc $rs/$rc: $(tail -5 "$E2E_TMP/cli")"

# --- after: the QP's last counts against the process's totals ------------
# A QP's count never exceeds its device's; the one data QP carries nearly
# all (its last line is at most a refresh old: >= 90%). Received: the
# device also counts the packets it dropped before any QP saw them.
check_consistent() {
	local who=$1 line stats=$E2E_TMP/stats.$1 k q t txerr bad=""
	line=$(grep " type RC " "$E2E_TMP/last.$who" 2>/dev/null | head -1)
	[[ -n $line && -s $stats ]] || { e2e_fail "stat_qp_totals_$who" "no QP line or no stats"; return; }
	txerr=$(stat_val "$stats" tx_errors)
	for k in tx_pkts rx_pkts retransmits timeouts seq_nak_sent seq_nak_rcvd \
		 rnr_nak_sent rnr_nak_rcvd duplicate_requests; do
		q=$(qp_val "$line" "$k") t=$(stat_val "$stats" "$k")
		[[ -n $q && -n $t ]] || { bad+=" $k:missing"; continue; }
		((q <= t + ${txerr:-0})) || bad+=" $k:$q>$t"
	done
	q=$(qp_val "$line" tx_pkts) t=$(stat_val "$stats" tx_pkts)
	((${q:-0} * 10 >= ${t:-1} * 9)) || bad+=" tx_pkts:$q<<$t"
	q=$(qp_val "$line" rx_pkts)
	t=$(($(stat_val "$stats" rx_pkts) - $(awk '/^drop_/ { s += $2 } END { print s + 0 }' "$stats")))
	((${q:-0} * 10 >= t * 9)) || bad+=" rx_pkts:$q<<$t(passed)"
	t=$(stat_val "$stats" fault_dropped)
	((${t:-0} > 0)) || bad+=" no_faults"
	echo "  $who: QP tx_pkts $(qp_val "$line" tx_pkts) of $(stat_val "$stats" tx_pkts)," \
	     "retransmits $(qp_val "$line" retransmits) of $(stat_val "$stats" retransmits)," \
	     "rx_pkts $(qp_val "$line" rx_pkts) of $(stat_val "$stats" rx_pkts)"
	[[ -z $bad ]] && e2e_pass "stat_qp_totals_$who" ||
		e2e_fail "stat_qp_totals_$who" "$bad; $line; $(grep -vE ' 0$' "$stats")"
}
check_consistent cli
check_consistent srv
r=$(qp_val "$(grep " type RC " "$E2E_TMP/last.cli" 2>/dev/null)" retransmits)
((${r:-0} > 0)) &&
	e2e_pass stat_qp_final_retransmits ||
	e2e_fail stat_qp_final_retransmits "$(cat "$E2E_TMP/last.cli")"
e2e_summary
