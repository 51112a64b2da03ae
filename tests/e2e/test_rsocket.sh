#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rsockets end to end, with unmodified Debian binaries on uroce's
# librdmacm.so.1 (server and client in two processes, 127.0.0.1):
#  - rstream, several sizes, blocking (-T b; its WRITEs with immediate
#    copied straight into the peer, counted), non-blocking (the default),
#    async (-T a: rpoll), small buffers (-B: many buffer halves offered)
#    addresses from rdma_getaddrinfo (-T r), IPv6 (::1) and keepalive
#    (-k 1: SO_KEEPALIVE, TCP_KEEPIDLE 1 set and read back), each with
#    -T v: every byte of every transfer checked by the receiver;
#  - riostream: riomap/riowrite (zero copy into the peer's mapped buffer),
#    with -T v;
#  - rcopy: a random file copied, compared byte for byte;
#  - Debian's librspreload.so turning plain TCP programs into rsockets
#    ones: iperf3 through `uroce run --rsocket` (10 MB, no getsockopt
#    error; its receiver may stop counting before the last bytes, as
#    iperf3 ends the test through its control connection), iperf3 -u with
#    its default datagram size (its datagram socket becomes a SOCK_DGRAM
#    rsocket; 2 s at 10 Mb/s) and a Python echo (2 MB of random bytes sent
#    with sendto(peer), echoed back and compared; TCP_INFO and TCP_MAXSEG
#    read as Linux's TCP answers them); no kernel TCP listener exists
#    on the port and the client's uroce counters carry the bytes, so
#    kernel TCP and UDP were not used;
#  - rstream -T v under UROCE_FAULT drops on both sides: it completes with
#    every byte right, and the counters show drops and retransmissions;
#  - udpong (SOCK_DGRAM: UD QPs, peers introduced over UDP): echo runs
#    (-T e: every message comes back, or the client sends it again)
#    non-blocking, blocking and async, over IPv4 and IPv6; bandwidth runs
#    (the server counts what arrived: UD may drop, so only "some") up to
#    the largest datagram, 2040 bytes; the client's uroce counters carry
#    at least every byte it sent, so the data did not go by kernel UDP.
# Takes 40 to 70 s on a loaded 2-core machine.
set -u
cd "$(dirname "$0")"
. ./lib.sh
e2e_libdir "${1:-}"

for p in rstream riostream rcopy udpong; do
	if ! command -v $p >/dev/null; then
		echo "FAIL: $p missing (apt-get install rdmacm-utils)"
		exit 1
	fi
done

RV_DIR=$("$(dirname "$0")/../../tools/uroce" rundir)/cm
PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
UROCE="$(cd ../.. && pwd)/tools/uroce"	# (the script runs in tests/e2e)

# wait_listen PORT: until a listener published 127.0.0.1/any:PORT (10 s)
wait_listen() {
	local i
	for i in $(seq 100); do
		compgen -G "$RV_DIR/0106-$1-*" >/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# pair NAME TIMEOUT PORT "server cmd" "client cmd" [REGEX...]: both exit 0
# and each REGEX is found in the server's or the client's output.
pair() {
	local name=$1 tmo=$2 port=$3 srv=$4 cli=$5
	shift 5
	local so="$E2E_TMP/$name.srv" co="$E2E_TMP/$name.cli" sp rs rc ok=1
	local t0=$SECONDS

	timeout "$tmo" bash -c "$srv" >"$so" 2>&1 &
	sp=$!
	wait_listen "$port" || echo "  server did not listen on $port"
	timeout "$tmo" bash -c "$cli" >"$co" 2>&1
	rc=$?
	if ((rc != 0)); then	# a failed client leaves the server waiting
		sleep 1
		kill -TERM "$sp" 2>/dev/null
	fi
	wait "$sp"
	rs=$?
	((rc == 0 && rs == 0)) || ok=0
	for re in "$@"; do
		grep -qE -- "$re" "$so" "$co" || { ok=0; echo "  missing /$re/"; }
	done
	if ((ok)); then
		e2e_pass "$name ($((SECONDS - t0)) s)"
	else
		e2e_fail "$name (server rc=$rs, client rc=$rc)"
		echo "--- server:"; tail -n 15 "$so"
		echo "--- client:"; tail -n 15 "$co"
	fi
}

# rstream NAME "options": a server and a client with the same options; both
# print the run's line ("custom BYTES XFERS ..."), which must show XFERS
# (below 1000: rstream prints 1000 as 1k).
# On a failure the non-zero uroce counters of both ends are shown (CM MADs,
# retransmissions, timeouts: what went wrong on the wire).
rstream_case() {
	local name=$1 opts=$2 xfers f0=$E2E_FAIL ip=${RSTREAM_IP:-127.0.0.1}
	xfers=$(sed -nE 's/.*-C ([0-9]+).*/\1/p' <<<"$opts")
	P=$((P + 1))
	pair "$name" 60 $P \
		"UROCE_STATS=$E2E_TMP/$name.srv.stats rstream -b $ip -p $P $opts" \
		"UROCE_STATS=$E2E_TMP/$name.cli.stats rstream -s $ip -p $P $opts" \
		"^custom +[0-9.kmg]+ +$xfers "
	if ((E2E_FAIL > f0)); then
		echo "--- counters (non-zero), client then server:"
		grep -hv ' 0$' "$E2E_TMP/$name".*.stats 2>/dev/null | tr '\n' ' '
		echo
	fi
}

P=$(e2e_port)
rstream_case rstream_64x500_nonblock "-S 64 -C 500 -T v"
rstream_case rstream_100k_blocking "-S 100000 -C 100 -T b -T v"
# rsockets' data are WRITEs with immediate: between two processes of one
# host the payload of one that finds its QP idle is copied (the first of
# most transfers here: 70-80 of the 100; the rest find a credit update or
# the transfer's first part unacknowledged and go as packets), none fell
# back to packets, and -T v checked every byte
f=$E2E_TMP/rstream_100k_blocking.cli.stats
imms=$(awk '$1 == "direct_write_imms" { v = $2 } END { print v + 0 }' "$f")
fb=$(awk '$1 == "direct_fallbacks" { v = $2 } END { print v + 0 }' "$f")
if ((imms >= 10 && fb == 0)); then
	e2e_pass "rstream_direct: $imms WRITEs with immediate copied"
else
	e2e_fail "rstream_direct: direct_write_imms $imms (want >= 10), direct_fallbacks $fb"
fi
rstream_case rstream_1m_async "-S 1000000 -C 5 -T a -T v"
rstream_case rstream_3000_async "-S 3000 -C 300 -T a -T v"
rstream_case rstream_small_buffers "-S 100000 -C 10 -B 8192 -i 0 -T v"
rstream_case rstream_resolve "-S 10000 -C 20 -T r -T v"
RSTREAM_IP=::1 rstream_case rstream_ipv6 "-S 100000 -C 20 -T v"
# -k 1: SO_KEEPALIVE and TCP_KEEPIDLE 1 through rstream's own calls (the
# keepalive frames themselves: tests/unit/api/rdmacm/test_rsocket_keepalive.c)
P=$((P + 1))
pair rstream_keepalive 60 $P \
	"rstream -b 127.0.0.1 -p $P -S 100000 -C 50 -k 1 -T v" \
	"rstream -s 127.0.0.1 -p $P -S 100000 -C 50 -k 1 -T v" \
	"^custom +[0-9.kmg]+ +50 " "^Keepalive: ON" "^ +time: 1$"

# rcopy: the server runs until killed; the copy is checked byte for byte.
P=$((P + 1))
head -c 3000001 /dev/urandom >"$E2E_TMP/rcopy.src"
(cd "$E2E_TMP" && exec timeout 60 rcopy -p $P) >"$E2E_TMP/rcopy.srv" 2>&1 &
sp=$!
wait_listen $P || echo "  rcopy server did not listen on $P"
t0=$SECONDS
if timeout 60 rcopy "$E2E_TMP/rcopy.src" "127.0.0.1:$E2E_TMP/rcopy.dst" \
	-p $P >"$E2E_TMP/rcopy.cli" 2>&1 &&
   cmp -s "$E2E_TMP/rcopy.src" "$E2E_TMP/rcopy.dst"; then
	e2e_pass "rcopy: 3000001 bytes copied and equal ($((SECONDS - t0)) s)"
else
	e2e_fail "rcopy"
	tail -n 5 "$E2E_TMP/rcopy.srv" "$E2E_TMP/rcopy.cli"
fi
kill -TERM $sp 2>/dev/null
wait $sp 2>/dev/null

# riostream: riomap on both sides, riowrite into the peer's buffer, -T v.
P=$((P + 1))
pair riostream_10k 60 $P "riostream -b 127.0.0.1 -p $P -S 10000 -C 20 -T v" \
	"riostream -s 127.0.0.1 -p $P -S 10000 -C 20 -T v" \
	"^custom +[0-9.kmg]+ +20 "
P=$((P + 1))
pair riostream_1m_async 60 $P \
	"riostream -b 127.0.0.1 -p $P -S 1000000 -C 3 -T a -T v" \
	"riostream -s 127.0.0.1 -p $P -S 1000000 -C 3 -T a -T v" \
	"^custom +[0-9.kmg]+ +3 "

# no_kernel_listener PORT NAME: under librspreload a listener is an rsocket,
# so the kernel has no TCP listener on the port.
no_kernel_listener() {
	if ss -Htln "sport = :$1" 2>/dev/null | grep -q .; then
		e2e_fail "$2: a kernel TCP listener on $1 (librspreload fell back)"
	else
		e2e_pass "$2: no kernel TCP listener on $1"
	fi
}

# sent_over_uroce NAME STATS BYTES: uroce carried at least BYTES for the
# process, as packets (its link counters) or, to a process of this host,
# as copies (a WRITE with immediate's payload: direct_bytes).
sent_over_uroce() {
	local tx
	tx=$(awk '$1 == "link_tx_bytes" || $1 == "direct_bytes" { s += $2 }
		END { print s + 0 }' "$2")
	if ((tx >= $3)); then
		e2e_pass "$1: $tx bytes sent through uroce"
	else
		e2e_fail "$1: only $tx bytes sent through uroce (want >= $3)"
	fi
}

if [[ ! -e $PRELOAD ]]; then
	e2e_skip preload "no $PRELOAD (apt-get install librdmacm1)"
else
	if command -v iperf3 >/dev/null; then
		P=$((P + 1))
		# through the launcher's --rsocket (the echo below preloads
		# librspreload by hand)
		UROCE_LIBDIR=$LIBDIR timeout 60 "$UROCE" run --rsocket -- \
			iperf3 -s -1 -B 127.0.0.1 -p $P >"$E2E_TMP/iperf.srv" 2>&1 &
		sp=$!
		wait_listen $P || echo "  iperf3 server did not listen on $P"
		no_kernel_listener $P preload_iperf3
		if UROCE_LIBDIR=$LIBDIR UROCE_STATS=$E2E_TMP/iperf.stats \
		   timeout 60 "$UROCE" run --rsocket -- \
			iperf3 -c 127.0.0.1 -p $P -n 10M \
			>"$E2E_TMP/iperf.cli" 2>&1 && wait $sp &&
		   grep -qE '[0-9.]+ MBytes .* receiver' "$E2E_TMP/iperf.srv" &&
		   grep -qE ' sec .* [0-9]+ +sender$' "$E2E_TMP/iperf.cli" &&
		   ! grep -q getsockopt "$E2E_TMP/iperf.srv" "$E2E_TMP/iperf.cli"; then
			e2e_pass "preload_iperf3: $(grep -E 'receiver' \
				"$E2E_TMP/iperf.srv" | tail -n 1 | tr -s ' ')"
		else
			e2e_fail preload_iperf3
			tail -n 5 "$E2E_TMP/iperf.srv" "$E2E_TMP/iperf.cli"
		fi
		kill $sp 2>/dev/null
		sent_over_uroce preload_iperf3 "$E2E_TMP/iperf.stats" 10000000

		# UDP: iperf3's datagram socket becomes a SOCK_DGRAM rsocket.
		# regress_iperf3_udp_defaults: without -l, iperf3 sizes its
		# datagrams from the control connection's TCP_MAXSEG, which
		# was 4096, over the datagram rsocket's 2040 ("unable to write
		# to stream socket"); it now fits (the MSS commit)
		P=$((P + 1))
		UROCE_LIBDIR=$LIBDIR timeout 60 "$UROCE" run --rsocket -- \
			iperf3 -s -1 -B 127.0.0.1 -p $P >"$E2E_TMP/iperfu.srv" 2>&1 &
		sp=$!
		wait_listen $P || echo "  iperf3 server did not listen on $P"
		if UROCE_LIBDIR=$LIBDIR UROCE_STATS=$E2E_TMP/iperfu.stats \
		   timeout 60 "$UROCE" run --rsocket -- \
			iperf3 -u -c 127.0.0.1 -p $P -b 10M -t 2 \
			>"$E2E_TMP/iperfu.cli" 2>&1 && wait $sp &&
		   grep -qE ' [1-9][0-9.]* MBytes .* receiver' "$E2E_TMP/iperfu.srv"; then
			e2e_pass "regress_iperf3_udp_defaults: $(grep -E 'receiver' \
				"$E2E_TMP/iperfu.srv" | tail -n 1 | tr -s ' ')"
		else
			e2e_fail regress_iperf3_udp_defaults
			tail -n 5 "$E2E_TMP/iperfu.srv" "$E2E_TMP/iperfu.cli"
		fi
		kill $sp 2>/dev/null
		# 2.5 MB of datagrams at 10 Mb/s for 2 s
		sent_over_uroce preload_iperf3_udp "$E2E_TMP/iperfu.stats" 2000000
	else
		e2e_skip preload_iperf3 "no iperf3"
	fi

	# A Python echo: the server uses accept(2) through ctypes, since
	# Debian's librspreload has no accept4 (Python's accept uses it).
	cat >"$E2E_TMP/echo.py" <<-'EOF'
	import ctypes, hashlib, os, socket, struct, sys
	mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	if mode == "srv":
	    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
	    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	    ls.bind(("127.0.0.1", port))
	    ls.listen(1)
	    libc = ctypes.CDLL(None, use_errno=True)
	    fd = libc.accept(ls.fileno(), None, None)
	    if fd < 0:
	        sys.exit("accept: " + os.strerror(ctypes.get_errno()))
	    got, h = 0, hashlib.sha256()
	    while got < n:
	        b = os.read(fd, 65536)
	        if not b:
	            break
	        h.update(b)
	        got += len(b)
	        off = 0
	        while off < len(b):
	            off += os.write(fd, b[off:])
	    print("server got", got, h.hexdigest())
	    os.close(fd)
	else:
	    data = os.urandom(n)
	    s = socket.create_connection(("127.0.0.1", port))
	    # as programs written for Linux's TCP: the peer named on each
	    # send (ignored), and TCP_INFO and TCP_MAXSEG read
	    peer = s.getpeername()
	    ti = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
	    mss = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
	    print("tcp_info state", ti[0], "snd_mss",
	          struct.unpack_from("I", ti, 16)[0], "maxseg", mss)
	    back, off = bytearray(), 0
	    while len(back) < n:
	        if off < n:
	            off += s.sendto(data[off:off + 32768], peer)
	        b = s.recv(65536)
	        if not b:
	            break
	        back += b
	    ok = bytes(back) == data
	    print("client echoed", len(back), "equal" if ok else "DIFFERENT",
	          hashlib.sha256(data).hexdigest())
	    sys.exit(0 if ok else 1)
	EOF
	PY=$(command -v python3)
	P=$((P + 1))
	(LD_PRELOAD=$PRELOAD exec timeout 60 "$PY" "$E2E_TMP/echo.py" srv $P \
		2000000) >"$E2E_TMP/echo.srv" 2>&1 &
	sp=$!
	wait_listen $P || echo "  echo server did not listen on $P"
	no_kernel_listener $P preload_echo
	if LD_PRELOAD=$PRELOAD UROCE_STATS=$E2E_TMP/echo.stats \
	   timeout 60 "$PY" "$E2E_TMP/echo.py" cli $P 2000000 \
		>"$E2E_TMP/echo.cli" 2>&1 && wait $sp &&
	   grep -q "client echoed 2000000 equal" "$E2E_TMP/echo.cli" &&
	   grep -q "server got 2000000" "$E2E_TMP/echo.srv"; then
		e2e_pass "preload_echo: 2000000 random bytes echoed, equal"
	else
		e2e_fail preload_echo
		tail -n 5 "$E2E_TMP/echo.srv" "$E2E_TMP/echo.cli"
	fi
	# regress_tcp_opts_drop_in (unit_api_rsocket has the details): the
	# echo's client sends with sendto(peer) and reads TCP_INFO: EISCONN
	# and ENOTSUP before; ESTABLISHED and the datagram-sized MSS now
	if grep -qx "tcp_info state 1 snd_mss 2040 maxseg 2040" "$E2E_TMP/echo.cli"; then
		e2e_pass "regress_tcp_opts_drop_in: $(grep tcp_info "$E2E_TMP/echo.cli")"
	else
		e2e_fail regress_tcp_opts_drop_in "$(head -n 5 "$E2E_TMP/echo.cli")"
	fi
	kill $sp 2>/dev/null
	sent_over_uroce preload_echo "$E2E_TMP/echo.stats" 2000000
fi

# Faults: drops on both sides; every byte still checked.
P=$((P + 1))
pair rstream_faults 60 $P \
	"UROCE_FAULT=seed=21,drop=0.03 UROCE_STATS=$E2E_TMP/fault.srv rstream -b 127.0.0.1 -p $P -S 100000 -C 40 -T v" \
	"UROCE_FAULT=seed=22,drop=0.03 UROCE_STATS=$E2E_TMP/fault.cli rstream -s 127.0.0.1 -p $P -S 100000 -C 40 -T v" \
	"^custom +[0-9.kmg]+ +40 "
sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$E2E_TMP"/fault.*; }
drops=$(sum fault_dropped) retx=$(sum retransmits) naks=$(sum seq_nak_sent)
if ((drops > 0 && retx + naks > 0)); then
	e2e_pass "rstream_faults: survived $drops drops ($retx retransmissions, $naks sequence NAKs)"
else
	e2e_fail "rstream_faults: counters drops=$drops retransmits=$retx naks=$naks"
fi

# udpong_case NAME "server options" "client options" REGEX BYTES: the server
# runs until killed; the client exits 0 with REGEX in its output and its
# uroce counters show at least BYTES sent.
udpong_case() {
	local name=$1 so=$2 co=$3 re=$4 bytes=$5 ip=${UDPONG_IP:-127.0.0.1}
	local t0=$SECONDS sp rc i
	P=$((P + 1))
	timeout 90 udpong -b $ip -p $P $so >"$E2E_TMP/$name.srv" 2>&1 &
	sp=$!
	for i in $(seq 100); do	# its UDP socket bound
		ss -Huln "sport = :$P" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	UROCE_STATS=$E2E_TMP/$name.stats timeout 60 udpong -s $ip -p $P $co \
		>"$E2E_TMP/$name.cli" 2>&1
	rc=$?
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	if ((rc == 0)) && grep -qE -- "$re" "$E2E_TMP/$name.cli"; then
		e2e_pass "$name: $(grep -E -- "$re" "$E2E_TMP/$name.cli" |
			tr -s ' ') ($((SECONDS - t0)) s)"
		sent_over_uroce "$name" "$E2E_TMP/$name.stats" "$bytes"
	else
		e2e_fail "$name (client rc=$rc, want /$re/)"
		echo "--- server:"; tail -n 5 "$E2E_TMP/$name.srv"
		echo "--- client:"; tail -n 5 "$E2E_TMP/$name.cli"
	fi
}

# echo: "xfers" is twice -C only once every message came back
udpong_case udpong_echo_nonblock "" "-C 500 -S 1000 -T e" \
	"^custom +1000 +1k " 500000
udpong_case udpong_echo_blocking "-T b" "-C 200 -S 1000 -T e -T b" \
	"^custom +1000 +400 " 200000
udpong_case udpong_echo_async "-T a" "-C 500 -S 100 -T e -T a" \
	"^custom +100 +1k " 50000
UDPONG_IP=::1 udpong_case udpong_echo_ipv6 "" "-C 100 -S 1000 -T e" \
	"^custom +1000 +200 " 100000
# bandwidth: "xfers" is what the server counted
udpong_case udpong_bw_nonblock "" "-C 2000 -S 1400" \
	"^custom +1\.3k +[1-9][0-9.k]* " 2800000
udpong_case udpong_bw_blocking_2040 "-T b" "-C 2000 -S 2040 -T b" \
	"^custom +1\.9k +[1-9][0-9.k]* " 4080000

e2e_summary
