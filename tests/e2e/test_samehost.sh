#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The same-host link (link/shm.c, engine/direct.c) with unmodified perftest
# and ibverbs-utils:
#  - by default RC WRITEs and READs are copied straight between the two
#    processes (direct_writes/direct_reads count every one, no fallback),
#    also when the target spins on memory (ib_write_lat), and so are RC
#    SENDs into the receives the peer posted (direct_sends, both sides of
#    ib_send_lat, no packet at all); with the copies
#    refused by a seccomp filter (tests/tools/noxmem) the refusal is
#    counted and the rings carry them instead;
#  - every datagram goes through the shared-memory rings (UROCE_STATS:
#    shm_tx_pkts equals link_tx_pkts on both sides, give or take the two
#    read a moment apart), for RC WRITE/READ/SEND (UROCE_LINK=rings:
#    packets only)/atomics, UD SEND, and rdma_cm;
#  - UROCE_LINK=udp on both sides puts everything on UDP (shm_tx_pkts 0);
#    on one side only, the pair still works (the side with rings finds no
#    ring for its peer and sends by UDP; the other always does);
#  - a peer killed in the middle of a transfer looks like a dead host: the
#    survivor retries and fails with "retry exceeded" within seconds,
#    never hangs; the next process to open a device removes its ring.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
for t in ib_write_bw ib_send_lat ib_read_bw ib_atomic_bw ibv_ud_pingpong; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/install-deps.sh)"; exit 77; }
done
[[ -d /dev/shm && -w /dev/shm ]] || { echo "SKIP: no writable /dev/shm: the same-host rings are off"; exit 77; }
export LD_LIBRARY_PATH=$LIBDIR
e2e_runtime_dir

# stat FILE NAME: the value of counter NAME in a UROCE_STATS file
stat_of() { awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"; }

# rings_carried NAME: both sides' stats show every datagram on the rings
rings_carried() {
	local f ok=1 tx shm
	for f in "$E2E_TMP/$1.stats."*; do
		tx=$(stat_of "$f" link_tx_pkts)
		shm=$(stat_of "$f" shm_tx_pkts)
		# the counters are read one after the other from a live
		# process (its progress thread may still send at exit): a
		# datagram or two between the reads, not more
		((tx > 0 && shm >= tx - 2 && shm <= tx + 2)) ||
			{ ok=0; echo "  $f: link_tx_pkts $tx, shm_tx_pkts $shm"; }
	done
	(($(ls "$E2E_TMP/$1.stats."* | wc -l) == 2)) || { ok=0; echo "  not two stats files"; }
	((ok)) && e2e_pass "$1_on_rings" || e2e_fail "$1_on_rings"
}

# on_udp NAME: neither side put anything in a ring
on_udp() {
	local f ok=1
	for f in "$E2E_TMP/$1.stats."*; do
		(($(stat_of "$f" shm_tx_pkts) == 0 && $(stat_of "$f" link_tx_pkts) > 0)) ||
			{ ok=0; echo "  $f: shm_tx_pkts $(stat_of "$f" shm_tx_pkts)"; }
	done
	((ok)) && e2e_pass "$1_on_udp" || e2e_fail "$1_on_udp"
}

# pair NAME ENV_SRV ENV_CLI BINARY ARGS...
pair() {
	local name=$1 es=$2 ec=$3 bin=$4 p
	shift 4
	p=$(e2e_port)
	e2e_pair "$name" 60 \
		"$es UROCE_STATS=$E2E_TMP/$name.stats.srv $bin -d uroce0 -x 0 -p $p $*" \
		"$ec UROCE_STATS=$E2E_TMP/$name.stats.cli $bin -d uroce0 -x 0 -p $p $* 127.0.0.1"
}

# copied NAME SIDE COUNTER N: SIDE's COUNTER reached N with no fallback
copied() {
	local f=$E2E_TMP/$1.stats.$2 v fb
	v=$(stat_of "$f" "$3")
	fb=$(stat_of "$f" direct_fallbacks)
	((v >= $4 && fb == 0)) && e2e_pass "$1_$2_copied" ||
		e2e_fail "$1_$2_copied" "$3 $v (want >= $4), direct_fallbacks $fb"
}

pair direct_write_bw "" "" ib_write_bw -s 65536 -n 2000
copied direct_write_bw cli direct_writes 2000
pair direct_read_bw "" "" ib_read_bw -s 1048576 -n 200
copied direct_read_bw cli direct_reads 200
pair direct_write_lat "" "" ib_write_lat -s 64 -n 2000
copied direct_write_lat cli direct_writes 2000
copied direct_write_lat srv direct_writes 2000
pair direct_send_lat "" "" ib_send_lat -s 64 -n 2000
copied direct_send_lat cli direct_sends 2000
copied direct_send_lat srv direct_sends 2000
f=$E2E_TMP/direct_send_lat.stats.cli
(($(stat_of "$f" shm_tx_pkts) == 0)) && e2e_pass direct_send_lat_no_packet ||
	e2e_fail direct_send_lat_no_packet "shm_tx_pkts $(stat_of "$f" shm_tx_pkts)"

# copies refused (seccomp, as in a container): counted, then packets
NOXMEM=$LIBDIR/../tests/noxmem
if [[ -x $NOXMEM ]]; then
	p=$(e2e_port)
	e2e_pair refused 60 \
		"UROCE_STATS=$E2E_TMP/refused.stats.srv ib_write_bw -d uroce0 -x 0 -p $p -s 65536 -n 2000" \
		"UROCE_STATS=$E2E_TMP/refused.stats.cli $NOXMEM ib_write_bw -d uroce0 -x 0 -p $p -s 65536 -n 2000 127.0.0.1"
	f=$E2E_TMP/refused.stats.cli
	(($(stat_of "$f" direct_refused) >= 1 && $(stat_of "$f" direct_writes) == 0 &&
		$(stat_of "$f" shm_tx_pkts) > 0)) && e2e_pass refused_on_rings ||
		e2e_fail refused_on_rings "direct_refused $(stat_of "$f" direct_refused), direct_writes $(stat_of "$f" direct_writes), shm_tx_pkts $(stat_of "$f" shm_tx_pkts)"
else
	e2e_skip refused "no $NOXMEM (built with the tests)"
fi

pair write_bw UROCE_LINK=rings UROCE_LINK=rings ib_write_bw -s 65536 -n 2000
rings_carried write_bw
pair read_bw UROCE_LINK=rings UROCE_LINK=rings ib_read_bw -s 1048576 -n 200
rings_carried read_bw
pair send_lat UROCE_LINK=rings UROCE_LINK=rings ib_send_lat -s 64 -n 2000
rings_carried send_lat
pair atomic_bw "" "" ib_atomic_bw -n 2000
rings_carried atomic_bw
pair send_bw_cm "" "" ib_send_bw -R -s 4096 -n 2000
rings_carried send_bw_cm

p=$(e2e_port)
e2e_pair ud_pingpong 60 \
	"UROCE_STATS=$E2E_TMP/ud_pingpong.stats.srv ibv_ud_pingpong -d uroce0 -g 0 -p $p -n 500" \
	"UROCE_STATS=$E2E_TMP/ud_pingpong.stats.cli ibv_ud_pingpong -d uroce0 -g 0 -p $p -n 500 127.0.0.1"
rings_carried ud_pingpong

pair forced_udp UROCE_LINK=udp UROCE_LINK=udp ib_write_bw -s 65536 -n 2000
on_udp forced_udp
pair one_side_udp UROCE_LINK=udp "" ib_write_bw -s 65536 -n 2000
on_udp one_side_udp

# --- a peer killed mid-transfer --------------------------------------
p=$(e2e_port)
ib_write_bw -d uroce0 -x 0 -p "$p" -D 20 >"$E2E_TMP/killed.srv" 2>&1 &
srv=$!
sleep 0.3
t0=$SECONDS
timeout 30 ib_write_bw -d uroce0 -x 0 -p "$p" -D 20 127.0.0.1 >"$E2E_TMP/killed.cli" 2>&1 &
cli=$!
# once the transfer runs: the server's receive counter moves
rcv=$ROOT/$srv/sys/class/infiniband/uroce0/ports/1/counters/port_rcv_packets
for _ in $(seq 100); do
	(($(cat "$rcv" 2>/dev/null || echo 0) > 2000)) && break
	sleep 0.1
done
kill -9 "$srv"
wait "$srv" 2>/dev/null
wait "$cli"
rc=$?
dt=$((SECONDS - t0))
if ((rc != 0 && rc != 124 && dt < 25)) &&
	grep -qiE 'retry|error' "$E2E_TMP/killed.cli"; then
	e2e_pass killed_peer_retry_exceeded
else
	e2e_fail killed_peer_retry_exceeded "client rc $rc after $dt s: $(tail -3 "$E2E_TMP/killed.cli")"
fi
# the next process to open a device removes rings whose owners died
ibv_devinfo -d uroce0 >/dev/null 2>&1
stale=0
for f in /dev/shm/uroce-"$(id -u)"-*; do
	[[ -e $f ]] || continue
	owner=$(od -An -t d4 -j 16 -N 4 "$f" | tr -d ' ')
	[[ -n $owner ]] && ! kill -0 "$owner" 2>/dev/null && stale=$((stale + 1))
done
((stale == 0)) && e2e_pass dead_ring_swept ||
	e2e_fail dead_ring_swept "$stale rings of dead processes in /dev/shm"
e2e_summary
