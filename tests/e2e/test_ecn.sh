#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# ECN and CNPs end to end (docs/design.md, "ECN and CNPs"), over UDP on lo
# (UROCE_LINK=udp: the IP header is what is checked; the soak runs over
# the same-host rings as well). This kernel has no
# ECN-marking qdisc, so UROCE_FAULT=ce=P marks CE on received datagrams:
#  - the data-integrity soak (tests/soak) under CE marks, over UDP and over
#    the same-host rings (whose slots carry the TOS byte): every byte and
#    completion right, both processes sent CNPs (np_cnp_sent) and reacted
#    to the other's (rp_cnp_handled), none answered or dropped as bad;
#  - ib_write_bw with captures: every frame leaves ECT(0); tshark decodes
#    the CNPs (BTH opcode 129 to the requester's QP, 32-byte UDP payload,
#    P_Key 0xffff) with no malformed or expert fields; the independent
#    checker verifies their ICRC; the requester's counter matches the CNPs
#    its capture holds;
#  - UROCE_ECN=0: frames leave Not-ECT, nothing is marked, no CNP.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
export UROCE_LINK=udp

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ICRC_CHECK=$ROOT/tests/interop/icrc_check.py
SOAK=${SOAK:-$LIBDIR/../tests/soak/uroce_soak}
if ! command -v tshark >/dev/null; then
	echo "FAIL: tshark is needed (apt-get install tshark)"
	exit 1
fi

# counter FILE NAME: a counter of a UROCE_STATS file (summed over devices)
counter() {
	awk -v n="$2" '$1 == n { s += $2 } END { print s + 0 }' "$1"
}

rand_ip() {
	echo "127.$((100 + RANDOM % 150)).$((RANDOM % 256)).$((1 + RANDOM % 254))"
}

# --- the soak under CE marks: every byte right, CNPs both ways ---
# soak_ce LINK: LINK is UROCE_LINK's value (udp or auto: the rings)
soak_ce() {
	local name=soak_ce_$1 port sa="$E2E_TMP/soak.$1.a.stats"
	local sb="$E2E_TMP/soak.$1.b.stats" ra rb pa line ok=1 side f
	if [[ ! -x $SOAK ]]; then
		e2e_fail "$name: no soak binary at $SOAK"
		return
	fi
	port=$(e2e_port)
	UROCE_LINK=$1 LD_LIBRARY_PATH=$LIBDIR UROCE_STATS=$sa UROCE_FAULT=seed=5,ce=0.05 \
		timeout 120 "$SOAK" -l "127.0.0.1:$port" -s 5 -m 16 -t 90 -S 20 \
		>"$E2E_TMP/soak.a.out" 2>&1 &
	pa=$!
	UROCE_LINK=$1 LD_LIBRARY_PATH=$LIBDIR UROCE_STATS=$sb UROCE_FAULT=seed=6,ce=0.05 \
		timeout 120 "$SOAK" -c "127.0.0.1:$port" -s 5 -m 16 -t 90 -S 20 \
		>"$E2E_TMP/soak.b.out" 2>&1
	rb=$?
	wait "$pa"
	ra=$?
	for side in a b; do
		line=$(grep '^soak [AB]:' "$E2E_TMP/soak.$side.out" | tail -n 1)
		echo "  $line"
		[[ $line =~ bytes_wrong=0( |$) && $line =~ completions_wrong=0( |$) ]] ||
			ok=0
	done
	if ((ra != 0 || rb != 0 || !ok)); then
		e2e_fail "$name: soak failed under CE marks (exit $ra $rb)"
		tail -n 8 "$E2E_TMP/soak.a.out" "$E2E_TMP/soak.b.out"
		return
	fi
	for f in "$sa" "$sb"; do
		echo "  $(basename "$f"): marked $(counter "$f" fault_ce_marked)" \
			"seen $(counter "$f" np_ecn_marked_roce_packets)" \
			"cnp_sent $(counter "$f" np_cnp_sent)" \
			"cnp_handled $(counter "$f" rp_cnp_handled)" \
			"cnp_ignored $(counter "$f" rp_cnp_ignored)"
		if (($(counter "$f" np_cnp_sent) == 0 || $(counter "$f" rp_cnp_handled) == 0 ||
			$(counter "$f" np_ecn_marked_roce_packets) == 0)); then
			ok=0
		fi
		(($(counter "$f" drop_unsupported) == 0 && $(counter "$f" drop_opcode_class) == 0)) ||
			ok=0
		# auto: the marks rode the same-host rings' slots
		[[ $1 == udp ]] || (($(counter "$f" shm_rx_pkts) > 0)) || ok=0
	done
	# a CNP is handled at most once, and only the other side's
	(($(counter "$sa" rp_cnp_handled) <= $(counter "$sb" np_cnp_sent) &&
		$(counter "$sb" rp_cnp_handled) <= $(counter "$sa" np_cnp_sent))) || ok=0
	if ((ok)); then
		e2e_pass "$name: every byte right under CE marks, CNPs sent and handled by both sides (UROCE_LINK=$1)"
	else
		e2e_fail "$name: counters do not show CNPs both ways (or show them as drops)"
	fi
}

# --- ib_write_bw captured: ECT(0) out, CNPs decoded ---
# capture NAME ENV: a write_bw pair with env ENV on both sides; sets
# SP/CP (captures) and SS/CS (stats) of server and client, CIP the
# client's address
capture() {
	local name=$1 env=$2 a b p
	a=$(rand_ip)
	b=$(rand_ip)
	CIP=$b
	p=$(e2e_port)
	SP=$E2E_TMP/$name.srv.pcap CP=$E2E_TMP/$name.cli.pcap
	SS=$E2E_TMP/$name.srv.stats CS=$E2E_TMP/$name.cli.stats
	e2e_pair "$name" 90 \
		"$env UROCE_ADDRS=$a UROCE_PCAP=$SP UROCE_STATS=$SS $U run -- ib_write_bw -d uroce0 -x 0 -F -p $p -n 300 -s 8192 -m 1024" \
		"$env UROCE_ADDRS=$b UROCE_PCAP=$CP UROCE_STATS=$CS $U run -- ib_write_bw -d uroce0 -x 0 -F -p $p -n 300 -s 8192 -m 1024 127.0.0.1" \
		'^ *8192[[:space:]]+300'
}

# ecn_values FILE: the distinct IP ECN values of the frames, "v:count ..."
ecn_values() {
	tshark -n -r "$1" -T fields -e ip.dsfield.ecn 2>/dev/null |
		sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'
}

write_bw_ce() {
	local name=write_bw_ce before=$E2E_FAIL qpn cnps bad v out ok
	capture "$name" "UROCE_FAULT=seed=7,ce=0.05"
	((E2E_FAIL == before)) || return
	# what leaves is ECT(0); what came in is ECT(0) or CE (the marks)
	v=$(tshark -n -r "$CP" -T fields -e ip.src -e ip.dsfield.ecn 2>/dev/null |
		sort | uniq -c | tr -s ' ' | tr '\n' ';')
	echo "  client capture (count src ecn): $v"
	if [[ $(ecn_values "$SP") =~ ^(2:[0-9]+ |2:[0-9]+ 3:[0-9]+ )$ &&
		$(ecn_values "$CP") =~ ^(2:[0-9]+ |2:[0-9]+ 3:[0-9]+ )$ ]]; then
		e2e_pass "$name: every frame ECT(0), or CE where marked"
	else
		e2e_fail "$name: ECN values $(ecn_values "$SP") / $(ecn_values "$CP")"
	fi
	# the client is the requester: the CNPs to it in its capture are the
	# server's, to its QP (those from it answer CE-marked ACKs); tshark
	# 4.0 decodes their BTH (opcode 129 "Unknown") and finds nothing
	# malformed
	out=$(tshark -n -r "$CP" \
		-Y "infiniband.bth.opcode == 129 && ip.dst == $CIP" -T fields \
		-E separator='|' -e infiniband.bth.destqp -e infiniband.bth.p_key \
		-e udp.length -e _ws.malformed -e _ws.expert.severity 2>/dev/null)
	cnps=$(grep -c . <<<"$out")
	qpn=$(sed -nE 's/.*local address:.*QPN (0x[0-9a-f]+).*/\1/p' "$E2E_TMP/$name.cli" | head -n 1)
	bad=$(awk -F'|' '$2 != 65535 || $3 != 40 || $4 != "" || $5 != ""' <<<"$out")
	ok=1
	((cnps > 0)) || ok=0
	[[ -z $bad && -n $qpn ]] || ok=0
	for v in $(cut -d'|' -f1 <<<"$out" | sort -u); do
		((v == qpn)) || { ok=0; echo "  a CNP to QP $v, not $qpn"; }
	done
	# the client counted each CNP of its capture once, and sent none back
	(($(counter "$CS" rp_cnp_handled) == cnps)) || ok=0
	(($(counter "$SS" np_cnp_sent) >= cnps)) || ok=0
	if ((ok)); then
		e2e_pass "$name: tshark decodes $cnps CNPs to QP $qpn, all handled ($(counter "$SS" np_cnp_sent) sent)"
	else
		e2e_fail "$name: CNPs in the capture $cnps, to ${qpn:-?}, client rp_cnp_handled $(counter "$CS" rp_cnp_handled), server np_cnp_sent $(counter "$SS" np_cnp_sent)"
		head -n 5 <<<"$bad"
	fi
	if out=$(python3 "$ICRC_CHECK" "$CP" 2>&1) &&
		[[ $out =~ ", 0 ICRC bad, 0 not RoCEv2" ]]; then
		e2e_pass "$name: every ICRC of the client's capture verifies, CNPs included"
	else
		e2e_fail "$name: ICRC check of the client's capture"
		echo "$out" | tail -n 3
	fi
}

ecn_off() {
	local name=write_bw_ecn_off before=$E2E_FAIL
	capture "$name" "UROCE_ECN=0 UROCE_FAULT=seed=7,ce=0.05"
	((E2E_FAIL == before)) || return
	if [[ $(ecn_values "$SP") =~ ^0:[0-9]+\ $ && $(ecn_values "$CP") =~ ^0:[0-9]+\ $ &&
		$(counter "$SS" fault_ce_marked) == 0 && $(counter "$CS" np_cnp_sent) == 0 &&
		$(counter "$SS" np_cnp_sent) == 0 ]]; then
		e2e_pass "$name: UROCE_ECN=0: Not-ECT, nothing marked, no CNP"
	else
		e2e_fail "$name: ECN values $(ecn_values "$SP") / $(ecn_values "$CP"), marked $(counter "$SS" fault_ce_marked), CNPs $(counter "$SS" np_cnp_sent)"
	fi
}

soak_ce udp
soak_ce auto
write_bw_ce
ecn_off
e2e_summary
