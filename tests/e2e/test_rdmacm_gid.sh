#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rdma_cm on every address of a device: a server whose device has two
# addresses (UROCE_ADDRS) is reached through its second one by Debian's
# unmodified rping and ucmatose, bound to that address or to the
# wildcard, and a client speaks from its own second address:
#  - loopback: two IPv4 loopback addresses per device (the rendezvous
#    directory names the address a listener is bound to);
#  - two network namespaces joined by a veth pair (root, else skipped):
#    the server's GID 0 is IPv4 and GID 1 IPv6, as test_multi_gid.sh; the
#    CM MADs and the connection's packets of GID 1 must leave from the
#    IPv6 address (an IPv4 one cannot reach an IPv6 peer).
# About 20 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
for p in rping ucmatose; do
	command -v $p >/dev/null || { echo "SKIP: $p missing (rdmacm-utils)"; exit 77; }
done

# addresses of this run: 127.A.B.1/.2 (server), .3/.4 (client)
L=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))
PORT=$(e2e_port)

# a client is tried again while it is refused (its server not yet
# listening: nothing publishes a listener on a network address)
export E2E_RETRY_RE=REJECTED

# on_wire NAME SIDE ADDR: every frame of SIDE's capture was sent from or
# to ADDR (the address the connection was made on, not the device's
# first), CM MADs and RC packets alike, and tshark finds nothing
# malformed in them.
on_wire() {
	local f=$E2E_TMP/$1.$2.pcap out bad mads rc
	[[ -n ${E2E_CASES:-} && ! $1 =~ ^(${E2E_CASES})$ ]] && return
	command -v tshark >/dev/null || { e2e_skip "$1 $2 capture" "no tshark"; return; }
	out=$(tshark -n -r "$f" -T fields -E separator=' ' -E occurrence=a \
		-e ip.src -e ip.dst -e ipv6.src -e ipv6.dst \
		-e infiniband.mad.attributeid -e _ws.malformed 2>/dev/null)
	bad=$(awk -v a="$3" '$1 != a && $2 != a || NF > 5' <<<"$out")
	mads=$(awk 'NF == 3' <<<"$out" | wc -l)
	rc=$(awk 'NF == 2' <<<"$out" | wc -l)
	if [[ -z $bad ]] && ((mads >= 3 && rc >= 10)); then
		e2e_pass "$1 $2: $mads CM MADs and $rc RC packets, all through $3"
	else
		e2e_fail "$1 $2: $mads CM MADs, $rc RC packets; not through $3:" \
			"$(head -n 5 <<<"$bad")"
	fi
}

# rping_case NAME SERVER-PREFIX SERVER-ADDR CLIENT-PREFIX DEST CLIENT-ADDR
# [SRC]: rping from CLIENT-ADDR (bound to SRC if given) to DEST, a server
# address bound to SERVER-ADDR (wildcard if empty); both captures checked.
rping_case() {
	local src="" pc=UROCE_PCAP=$E2E_TMP/$1
	PORT=$((PORT + 1))
	[[ -n ${7:-} ]] && src="-I $7"
	e2e_pair "$1" 40 "$pc.srv.pcap $2 rping -s ${3:+-a $3} -p $PORT -C 10 -S 100 -V" \
		"$pc.cli.pcap $4 rping -c $src -a $5 -p $PORT -C 10 -S 100 -V -v" \
		'rdma-ping-9:'
	on_wire "$1" srv "$5"
	on_wire "$1" cli "$6"
}

# ucmatose_case NAME SERVER-PREFIX SERVER-ADDR CLIENT-PREFIX DEST
# CLIENT-ADDR: two connections of ten messages each way.
ucmatose_case() {
	local pc=UROCE_PCAP=$E2E_TMP/$1
	PORT=$((PORT + 1))
	e2e_pair "$1" 40 "$pc.srv.pcap $2 ucmatose -b $3 -p $PORT -c 2 -C 10" \
		"$pc.cli.pcap $4 ucmatose -s $5 -p $PORT -c 2 -C 10" \
		'data transfers complete'
	on_wire "$1" srv "$5"
	on_wire "$1" cli "$6"
}

SRV="UROCE_ADDRS=$L.1,$L.2"
CLI="UROCE_ADDRS=$L.3,$L.4"
rping_case rping_lo_gid1 "$SRV" $L.2 "$CLI" $L.2 $L.3
rping_case rping_lo_any_gid1 "$SRV" "" "$CLI" $L.2 $L.3
rping_case rping_lo_from_gid1 "$SRV" $L.2 "$CLI" $L.2 $L.4 $L.4
ucmatose_case ucmatose_lo_gid1 "$SRV" $L.2 "$CLI" $L.2 $L.3

NA=cmgid-a-$$
NB=cmgid-b-$$
e2e_netns_pair netns "$NA" "$NB" cmgid-va cmgid-vb 10.211.0.1 10.211.0.2 fd11::1 fd11::2 || {
	e2e_summary
	exit
}
SRV="UROCE_ADDRS=10.211.0.1,fd11::1 ip netns exec $NA"
rping_case rping_netns_v4_gid0 "$SRV" 10.211.0.1 \
	"UROCE_ADDRS=10.211.0.2 ip netns exec $NB" 10.211.0.1 10.211.0.2
rping_case rping_netns_v6_gid1 "$SRV" fd11::1 \
	"UROCE_ADDRS=fd11::2 ip netns exec $NB" fd11::1 fd11::2
rping_case rping_netns_any_v6_gid1 "$SRV" "" \
	"UROCE_ADDRS=fd11::2 ip netns exec $NB" fd11::1 fd11::2
# the client's own IPv6 address is its GID 1: the route picks it
rping_case rping_netns_cli_v6_gid1 "$SRV" fd11::1 \
	"UROCE_ADDRS=10.211.0.2,fd11::2 ip netns exec $NB" fd11::1 fd11::2
ucmatose_case ucmatose_netns_v6_gid1 "$SRV" fd11::1 \
	"UROCE_ADDRS=fd11::2 ip netns exec $NB" fd11::1 fd11::2
e2e_summary
