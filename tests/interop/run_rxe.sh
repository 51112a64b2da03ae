#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Interoperability with Linux Soft-RoCE (rdma_rxe): uroce on this host
# (10.99.0.1, GID index 0) against the stock Debian kernel's rxe in a qemu
# guest (10.99.0.11, GID index 1), both directions, with unmodified
# ibverbs-utils and perftest on both ends. Every case is captured on the
# host bridge; a case passes when both programs succeed and the capture
# shows: every ICRC right (independent icrc_check.py, real IP headers, both
# directions), the opcodes the case must produce, and exactly the datagrams
# uroce recorded (UROCE_PCAP) on the wire.
#
# Opt-in (not part of ctest): needs root, qemu and about 10 minutes.
#   tests/interop/run_rxe.sh [LIBDIR]      (default build/lib)
# Runs inside the network namespace RXE_VM_NETNS (default uroce-rxe, created
# and deleted here when absent). Environment: KEEP=1 leaves the guest (and
# the namespace) running; CASES='regex' runs only the matching cases; UROCE_* variables are passed to uroce (e.g. UROCE_GSO=0);
# RXE_VM=path to shared/tools/rxe-vm; OUT=dir for captures and logs.
set -u
{	# parsed whole before it runs: editing this file cannot break a run
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIBDIR=$(cd "${1:-$ROOT/build/lib}" 2>/dev/null && pwd)
RXE_VM=${RXE_VM:-$ROOT/../shared/tools/rxe-vm}
VM="$RXE_VM/rxe-vm"
ICRC_CHECK=${ICRC_CHECK:-$RXE_VM/icrc_check.py}
XCHECK=$ROOT/tests/interop/pcap_xcheck.py
OUT=${OUT:-$(mktemp -d /tmp/uroce-rxe.XXXXXX)}
WORK=${RXE_VM_WORK:-/var/tmp/rxe-vm}
HOST_IP=10.99.0.1
GUEST_IP=10.99.0.11
export ICRC_CHECK

die() { echo "run_rxe: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "must run as root (bridge, tap, tcpdump)"
[[ -n $LIBDIR && -e $LIBDIR/libibverbs.so.1 ]] ||
	die "no libibverbs.so.1 in '${1:-$ROOT/build/lib}' (build first)"
[[ -x $VM && -r $ICRC_CHECK ]] ||
	die "rxe-vm harness missing: $RXE_VM (shared/ must sit beside the repo)"
for c in qemu-system-x86_64 debootstrap tcpdump tshark python3 \
	ibv_rc_pingpong ib_write_bw; do
	command -v "$c" >/dev/null ||
		die "missing $c: apt-get install -y qemu-system-x86 qemu-utils debootstrap tcpdump e2fsprogs tshark ibverbs-utils perftest"
done
mkdir -p "$OUT"
echo "run_rxe: library $LIBDIR, output $OUT"

PASS=0
FAIL=0
STARTED=0
cleanup() {
	"$VM" capture stop >/dev/null 2>&1
	if ((STARTED)) && [[ ${KEEP:-0} != 1 ]]; then
		"$VM" teardown >/dev/null 2>&1
	fi
}
trap cleanup EXIT

# ---- image and guest -------------------------------------------------------
# The image is built in the machine's own namespace (debootstrap needs the
# package mirror); everything else runs inside a namespace of our own, so no
# test traffic for 10.99.0.x ever touches the machine's own namespace.
if [[ ! -f $WORK/rootfs.img ]]; then
	echo "run_rxe: building the guest image (about 5 minutes)"
	RXE_VM_NETNS= "$VM" build >"$OUT/build.log" 2>&1 ||
		{ tail -n 20 "$OUT/build.log"; die "image build failed"; }
fi
export RXE_VM_NETNS=${RXE_VM_NETNS:-uroce-rxe}
if [[ $(ip netns identify $$ 2>/dev/null) != "$RXE_VM_NETNS" ]]; then
	if ! ip netns list | awk '{print $1}' | grep -qx "$RXE_VM_NETNS"; then
		ip netns add "$RXE_VM_NETNS" &&
			ip -n "$RXE_VM_NETNS" link set lo up ||
			die "cannot create network namespace $RXE_VM_NETNS"
		NS_CREATED=1
	fi
	trap - EXIT
	OUT=$OUT ip netns exec "$RXE_VM_NETNS" "$0" "$LIBDIR"
	rc=$?
	((${NS_CREATED:-0})) && [[ ${KEEP:-0} != 1 ]] &&
		ip netns del "$RXE_VM_NETNS" 2>/dev/null
	exit $rc
fi
if ! "$VM" status 2>/dev/null | grep -q "guest 1: running"; then
	STARTED=1
	"$VM" start 1 || die "guest 1 did not boot"
fi
"$VM" exec 1 -t 60 'ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE &&
	cat /sys/class/infiniband/rxe0/ports/1/gids/1' | grep -q ':0a63:000b$' ||
	die "rxe0 in guest 1 is not active with GID 1 = ::ffff:$GUEST_IP"

# ---- one case --------------------------------------------------------------
ok_line='[0-9]+ bytes in [0-9.]+ seconds'
# a result row: bytes, iterations, peak, average (non-zero, may be < 1)
bw_line='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+([1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*)[[:space:]]+[0-9.]+'
lat_line='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'
TMO=${TMO:-90}

counters() {	# rxe's port counters in the guest, "name value" per line
	"$VM" exec 1 -t 30 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters &&
		for f in *; do echo "$f $(cat $f)"; done' 2>/dev/null
}

# host PROG ARGS: uroce side. guest PROG ARGS: rxe side (same program).
host_cmd() {
	echo "env LD_LIBRARY_PATH=$LIBDIR UROCE_ADDRS=$HOST_IP" \
		"UROCE_PCAP=$1 UROCE_STATS=$2 timeout $TMO $3"
}

# run_case NAME WHO "host args" "guest args" "must opcodes" REGEX
# WHO: gs = guest server / host client, hs = host server / guest client.
# Args are given without the server address; the client gets it appended.
run_case() {
	local name=$1 who=$2 hargs=$3 gargs=$4 must=$5 re=$6
	local d="$OUT/$name" ok=1 hrc grc job i o seen
	[[ -n ${CASES:-} && ! $name =~ $CASES ]] && return
	mkdir -p "$d"
	rm -f "$d"/*
	counters >"$d/rxe_before"
	"$VM" capture start "$d/wire.pcap" >/dev/null || { echo "FAIL $name: no capture"; FAIL=$((FAIL + 1)); return; }
	local hc
	if [[ $who == gs ]]; then
		job=$("$VM" exec 1 -b "timeout $TMO $gargs")
		hc=$(host_cmd "$d/host.pcap" "$d/host.stats" "$hargs $GUEST_IP")
		# the guest (TCG) takes a moment to listen
		for i in $(seq 40); do
			sleep 0.5
			bash -c "$hc" >"$d/host.out" 2>&1
			hrc=$?
			grep -qiE "couldn't connect|connection refused|unable to connect|RDMA_CM_EVENT_REJECTED" \
				"$d/host.out" || break
		done
		"$VM" wait 1 "$job" -t $((TMO + 30)) >"$d/guest.out" 2>&1
		grc=$?
	else
		hc=$(host_cmd "$d/host.pcap" "$d/host.stats" "$hargs")
		bash -c "$hc" >"$d/host.out" 2>&1 &
		local hp=$!
		sleep 1
		"$VM" exec 1 -t $((TMO + 30)) \
			"for i in 1 2 3 4 5 6 7 8 9 10; do
				timeout $TMO $gargs $HOST_IP >/tmp/c.out 2>&1; rc=\$?
				grep -qiE \"couldn't connect|connection refused|unable to connect|RDMA_CM_EVENT_REJECTED\" /tmp/c.out || break
				sleep 0.5
			done; cat /tmp/c.out; exit \$rc" >"$d/guest.out" 2>&1
		grc=$?
		wait "$hp"
		hrc=$?
	fi
	# tcpdump delivers in blocks: give the last ones time to reach the file
	sleep 1.5
	"$VM" capture stop >/dev/null
	counters >"$d/rxe_after"
	((hrc == 0 && grc == 0)) || { ok=0; echo "  exit status: host $hrc, guest $grc"; }
	# the client prints the result (perftest servers of *_lat print none)
	o="$d/host.out"
	[[ $who == hs ]] && o="$d/guest.out"
	grep -qE -- "$re" "$o" || { ok=0; echo "  $(basename "$o"): missing /$re/"; }
	# the wire: ICRCs (independent checker, on every frame, both ways)
	python3 "$ICRC_CHECK" "$d/wire.pcap" >"$d/icrc.out" 2>&1 ||
		{ ok=0; echo "  icrc_check.py:"; sed 's/^/    /' "$d/icrc.out"; }
	grep -qE ': [1-9][0-9]* ICRC ok, 0 ICRC bad, 0 not RoCEv2' "$d/icrc.out" ||
		ok=0
	for ip in $HOST_IP $GUEST_IP; do
		n=$(tshark -n -r "$d/wire.pcap" -Y "ip.src == $ip" 2>/dev/null | wc -l)
		((n > 0)) || { ok=0; echo "  no packets from $ip on the wire"; }
	done
	# what uroce recorded is what the wire carried
	python3 "$XCHECK" wire bridge "$d/wire.pcap" "$HOST_IP:$d/host.pcap" \
		>"$d/xcheck.out" 2>&1 ||
		{ ok=0; echo "  wire vs UROCE_PCAP:"; sed 's/^/    /' "$d/xcheck.out"; }
	# opcodes
	seen=$(tshark -n -r "$d/wire.pcap" -T fields -e infiniband.bth.opcode \
		2>/dev/null | sort -nu | tr '\n' ' ')
	for o in $must; do
		[[ " $seen " == *" $o "* ]] || { ok=0; echo "  opcode $o not seen (seen: $seen)"; }
	done
	if ((ok)); then
		PASS=$((PASS + 1))
		echo "PASS $name  (opcodes $seen; $(sed -E 's/.*: //' "$d/icrc.out"))"
	else
		FAIL=$((FAIL + 1))
		echo "FAIL $name  ($d)"
		echo "  --- host:"; tail -n 6 "$d/host.out" | sed 's/^/    /'
		echo "  --- guest:"; tail -n 6 "$d/guest.out" | sed 's/^/    /'
		echo "  --- uroce counters (non-zero):"
		grep -vE ' 0$|^#' "$d/host.stats" 2>/dev/null | tr '\n' ' ' |
			fold -w 76 | sed 's/^/    /'
		echo
		echo "  --- rxe counters (changed):"
		join "$d/rxe_before" "$d/rxe_after" 2>/dev/null |
			awk '$2 != $3 { printf "%s +%d ", $1, $3 - $2 }' |
			fold -w 76 | sed 's/^/    /'
		echo
	fi
}

port() { echo $((20000 + RANDOM % 20000)); }

# ---- the matrix ------------------------------------------------------------
# opcodes: RC SEND F/M/L/O 0/1/2/4, WRITE F/M/L/O 6/7/8/10, READ req 12,
# resp F/M/L/O 13/14/15/16, ACK 17, ATOMIC ACK 18, CmpSwap 19, FetchAdd 20,
# UD SEND only 100
for who in gs hs; do
	for s in 64 4096; do
		p=$(port)
		must="4 17"
		[[ $s == 4096 ]] && must="0 1 2 17"
		run_case "rc_pingpong_${s}_$who" $who \
			"ibv_rc_pingpong -d uroce0 -g 0 -p $p -n 20 -s $s -m 1024" \
			"ibv_rc_pingpong -d rxe0 -g 1 -p $p -n 20 -s $s -m 1024" \
			"$must" "$ok_line"
	done
	p=$(port)
	run_case "ud_pingpong_512_$who" $who \
		"ibv_ud_pingpong -d uroce0 -g 0 -p $p -n 20 -s 512" \
		"ibv_ud_pingpong -d rxe0 -g 1 -p $p -n 20 -s 512" "100" "$ok_line"
done

perf() {	# perf NAME BIN "args" MUST REGEX  (both directions)
	local who p
	for who in gs hs; do
		p=$(port)
		run_case "${1}_$who" $who \
			"$2 -d uroce0 -x 0 -F -p $p -m 1024 $3" \
			"$2 -d rxe0 -x 1 -F -p $p -m 1024 $3" "$4" "$5"
	done
}
perf send_lat ib_send_lat "-n 20 -s 64" "4 17" "$lat_line"
perf send_lat_4096 ib_send_lat "-n 10 -s 4096" "0 1 2 17" "$lat_line"
perf send_bw ib_send_bw "-n 20 -s 4096" "0 1 2 17" "$bw_line"
perf send_lat_ud ib_send_lat "-c UD -n 20 -s 512" "100" "$lat_line"
perf write_lat ib_write_lat "-n 20 -s 64" "10 17" "$lat_line"
perf write_bw ib_write_bw "-n 20 -s 4096" "6 7 8 17" "$bw_line"
perf write_bw_64 ib_write_bw "-n 50 -s 64" "10 17" "$bw_line"
perf read_lat ib_read_lat "-n 20 -s 64" "12 16" "$lat_line"
perf read_lat_2500 ib_read_lat "-n 10 -s 2500" "12 13 14 15" "$lat_line"
perf atomic_lat ib_atomic_lat "-n 20" "20 18" "$lat_line"
perf atomic_lat_cas ib_atomic_lat "-n 20 -A CMP_AND_SWAP" "19 18" "$lat_line"

# rdma_cm: the kernel's CM (REQ/REP/RTU/DREQ/DREP on QP1, UD opcode 100)
# against uroce's librdmacm, then rping's SEND / RDMA READ / RDMA WRITE
# exchange on the QP the CMs set up; -V checks every byte. The client's
# "-a" takes the server address run_case appends. The host client starts
# late for the reason given at rstream_gs below (seen here too: every byte
# right, the cross-check failed on the refused first REQ).
ropts="-C 5 -S 100 -V -v"
p=$(port)
run_case rping_gs gs "sh -c 'sleep 8; exec rping -c -p $p $ropts -a \"\$0\"'" \
	"rping -s -a $GUEST_IP -p $p $ropts" \
	"100 4 12 16 10 17" "ping data: rdma-ping-4"
p=$(port)
run_case rping_hs hs "rping -s -a $HOST_IP -p $p $ropts" \
	"rping -c -p $p $ropts -a" \
	"100 4 12 16 10 17" "ping data: rdma-ping-4"

# rsockets: uroce's rsocket against rdma-core's (the guest's librdmacm on
# the kernel rdma_cm), both directions: the connect private data, credits
# and buffer offers, RDMA WRITE WITH IMMEDIATE (first/middle/last-with-imm/
# only-with-imm) carrying the data, -T v checking every byte on each side.
# The host client starts 8 s late: the guest's rstream (TCG) takes a while
# to listen, and a refused first try, retried by run_case, would leave a REQ
# on the bridge that the retry's UROCE_PCAP no longer holds (seen once:
# the data went through, -T v on both ends, but the cross-check failed).
sopts="-S 100000 -C 10 -T b -T v"
p=$(port)
run_case rstream_gs gs "sh -c 'sleep 8; exec rstream -p $p $sopts -s \"\$0\"'" \
	"rstream -b $GUEST_IP -p $p $sopts" \
	"100 6 9 11 17" "^custom +[0-9.kmg]+ +10 "
p=$(port)
run_case rstream_hs hs "rstream -b $HOST_IP -p $p $sopts" \
	"rstream -p $p $sopts -s" \
	"100 6 9 11 17" "^custom +[0-9.kmg]+ +10 "

echo "run_rxe: $PASS passed, $FAIL failed  (captures and logs in $OUT)"
((FAIL == 0))
exit
}
