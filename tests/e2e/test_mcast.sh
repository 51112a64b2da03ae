#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# UD multicast with Debian's unmodified mckey (rdmacm-utils): receivers
# join a group (rdma_join_multicast, MULTICAST_JOIN, ibv_attach_mcast),
# post -C receives and exit 0 only when all have arrived; the sender (-s)
# joins and sends -C datagrams to the group (QPN 0xFFFFFF, the join's
# Q_Key). mckey checks no payload, so the receivers' drop counters
# (UROCE_STATS) must also show nothing lost or rejected.
#  - loopback: two processes on this host (IP_MULTICAST_LOOP), two
#    receivers at once, a send-only sender (-o), and -l (the sender's QP
#    created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: receivers on this host
#    still hear it; that the sender does not is unit_engine_mcast's, as
#    mckey leaves the group right after posting its sends);
#  - real IP multicast between two network namespaces joined by a veth
#    pair, IPv4 (239.x) and IPv6 (ff0e::) groups (root; skipped otherwise).
# About 30 s (mckey sleeps 3 s after joining).
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v mckey >/dev/null || { echo "SKIP: rdmacm-utils not installed"; exit 77; }
C=20
# a group of its own per run, so concurrent runs never hear each other
G4=239.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))

# stat FILE NAME: a counter from a UROCE_STATS file (0 if absent)
stat() {
	awk -v n="$2" '$1 == n { s += $2 } END { print s + 0 }' "$1"
}

# mc_case NAME SENDER-ARGS PREFIX-R PREFIX-S GROUP BIND-R BIND-S NRECV
# Receivers first, then the sender; every process must exit 0, every
# receiver must have had C datagrams delivered with no drop.
mc_case() {
	local name=$1 sargs=$2 pr=$3 ps=$4 g=$5 br=$6 bs=$7 nr=$8 i ok=1 rc
	local pids=() f
	if [[ -n ${E2E_CASES:-} && ! $name =~ ^(${E2E_CASES})$ ]]; then
		E2E_UNSELECTED=$((E2E_UNSELECTED + 1))
		return
	fi
	for ((i = 0; i < nr; i++)); do
		f=$E2E_TMP/$name.r$i
		timeout 40 bash -c "UROCE_STATS=$f.stats $pr mckey -m $g -b $br -C $C" \
			>"$f" 2>&1 &
		pids+=($!)
	done
	sleep 1	# joined and receives posted before the sender's 3 s pause ends
	f=$E2E_TMP/$name.s
	timeout 40 bash -c "UROCE_STATS=$f.stats $ps mckey -m $g -b $bs -s -C $C $sargs" \
		>"$f" 2>&1
	rc=$?
	((rc == 0)) || { ok=0; echo "  sender rc=$rc"; }
	for ((i = 0; i < nr; i++)); do
		wait "${pids[$i]}" || { rc=$?; ok=0; echo "  receiver $i rc=$rc"; }
		f=$E2E_TMP/$name.r$i
		grep -q "joined dgid" "$f" || { ok=0; echo "  receiver $i never joined"; }
		if (($(stat "$f.stats" rx_pkts) < C)); then
			ok=0
			echo "  receiver $i: rx_pkts $(stat "$f.stats" rx_pkts) < $C"
		fi
		if grep -E "^drop_[a-z_]+ [1-9]" "$f.stats"; then
			ok=0
			echo "  receiver $i dropped the above"
		fi
	done
	grep -qE -- "$E2E_SANITIZER_RE" "$E2E_TMP/$name".* && ok=0
	if ((ok)); then
		e2e_pass "$name"
	else
		e2e_fail "$name"
		for f in "$E2E_TMP/$name".*; do
			echo "--- $f:"
			grep -v "^[a-z_]* 0$" "$f" | tail -n 20
		done
	fi
}

mc_case mckey_lo "" "" "" "$G4" 127.0.0.1 127.0.0.1 1
mc_case mckey_lo_2recv "" "" "" "$G4" 127.0.0.1 127.0.0.1 2
mc_case mckey_lo_sendonly "-o" "" "" "$G4" 127.0.0.1 127.0.0.1 1
mc_case mckey_lo_noself "-l" "" "" "$G4" 127.0.0.1 127.0.0.1 1
NA=mcast-a-$$
NB=mcast-b-$$
e2e_netns_pair mckey_netns "$NA" "$NB" mcast-va mcast-vb 10.208.0.1 10.208.0.2 fd08::1 fd08::2 || {
	e2e_summary
	exit
}
# the receiving end's packet count says the group's datagrams crossed it
mcast_rx() {
	ip -n "$NB" -s link show mcast-vb | awk '/RX:/ { getline; print $2 }'
}
before=$(mcast_rx)
mc_case mckey_netns_v4 "" "UROCE_ADDRS=10.208.0.2 ip netns exec $NB" \
	"UROCE_ADDRS=10.208.0.1 ip netns exec $NA" "$G4" 10.208.0.2 10.208.0.1 1
after=$(mcast_rx)
if ((after - before >= C)); then
	e2e_pass mckey_netns_v4_on_veth
else
	e2e_fail "mckey_netns_v4_on_veth: veth rx packets $before -> $after"
fi
G6=ff0e::$((RANDOM % 9000 + 1000)):$((RANDOM % 9000 + 1000))
mc_case mckey_netns_v6 "" "UROCE_ADDRS=fd08::2 ip netns exec $NB" \
	"UROCE_ADDRS=fd08::1 ip netns exec $NA" "$G6" fd08::2 fd08::1 1
e2e_summary
