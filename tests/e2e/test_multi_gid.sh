#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every GID of a device receives: a server device given two addresses
# (UROCE_ADDRS) is reached through each GID index by Debian's unmodified
# ibv_rc_pingpong and ibv_ud_pingpong (server -g N announces GID N, the
# client sends there, the server's QP answers from that same address or
# the client's RC QP would drop it as wrong_peer):
#  - loopback: two IPv4 loopback addresses;
#  - two network namespaces joined by a veth pair (root, else skipped):
#    GID 0 IPv4 and GID 1 IPv6 on one device, a peer of each family.
# About 10 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibverbs-utils not installed"; exit 77; }

# addresses of this run: 127.A.B.1/.2 (server), .3 (client)
P=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))

# gid_case NAME PROGRAM GID SERVER-PREFIX CLIENT-PREFIX SERVER-HOST
gid_case() {
	local name=$1 prog=$2 g=$3 sp=$4 cp=$5 host=$6 port
	port=$(e2e_port)
	e2e_pair "$name" 30 \
		"$sp $prog -g $g -p $port -n 20 -s 1024" \
		"$cp $prog -g 0 -p $port -n 20 -s 1024 $host" \
		"20 iters in"
}

for g in 0 1; do
	gid_case rc_lo_gid$g ibv_rc_pingpong $g "UROCE_ADDRS=$P.1,$P.2" \
		"UROCE_ADDRS=$P.3" 127.0.0.1
	gid_case ud_lo_gid$g ibv_ud_pingpong $g "UROCE_ADDRS=$P.1,$P.2" \
		"UROCE_ADDRS=$P.3" 127.0.0.1
done

NA=mcast-ga-$$
NB=mcast-gb-$$
e2e_netns_pair gid_netns "$NA" "$NB" mcast-ga mcast-gb 10.209.0.1 10.209.0.2 fd09::1 fd09::2 || {
	e2e_summary
	exit
}
SRV="UROCE_ADDRS=10.209.0.1,fd09::1 ip netns exec $NA"
for prog in rc ud; do
	gid_case ${prog}_netns_v4_gid0 ibv_${prog}_pingpong 0 "$SRV" \
		"UROCE_ADDRS=10.209.0.2 ip netns exec $NB" 10.209.0.1
	gid_case ${prog}_netns_v6_gid1 ibv_${prog}_pingpong 1 "$SRV" \
		"UROCE_ADDRS=fd09::2 ip netns exec $NB" 10.209.0.1
done
e2e_summary
