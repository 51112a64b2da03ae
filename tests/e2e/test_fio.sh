#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# fio's rdma ioengine (Debian's fio, unmodified) over uroce's librdmacm:
# a server job (rw=read) and a client job (rw=write) that connect through
# rdma_cm at 127.0.0.1.
#  - verb=send: the client SENDs each block, the server receives it into
#    its io_u and, with --verify=crc32c, checks every block's header
#    (offset, length) and CRC-32C against what the client wrote: 4 KiB,
#    64 KiB and 1 MiB blocks;
#  - verb=write and verb=read: the client RDMA-WRITEs into / READs from
#    the server's buffers (fio checks no data here: the amount moved and
#    that no completion failed).
# Both sides must exit 0 with the whole size done and no failed
# completion or verify error.
#
# The SEND server posts a receive for every block of the run before the
# client starts (its iodepth is the number of blocks): fio connects with
# rnr_retry 0, and its server posts a receive again only after it has
# polled and verified a completion, while the client's SEND completes as
# soon as the server's NIC acknowledges it. A server thread that loses
# the CPU for a moment on a loaded machine therefore lets its receive
# queue run dry, and the first SEND that finds it empty fails the client
# with RNR_RETRY_EXC_ERR, as it would on any NIC. That this is what
# happened (and not a receive uroce failed to see) was shown with the
# server's UROCE_LOG=debug note at the NAK: every receive it had posted
# was taken by a distinct SEND, with up to iodepth completions still
# unpolled in its CQ, and its CQ drained two seconds later (so no wake-up
# was lost). The server here logs at debug level, and a failure shows
# that note.
#
# Each pair is bounded (PAIR_TIMEOUT); fio runs each job in a forked
# process of its own session that `timeout` does not reach, so whatever
# is left of a pair afterwards is killed by its environment tag (lib.sh
# e2e_kill_tagged) and counted as a failure. About 20 s when it passes.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v fio >/dev/null || { echo "SKIP: fio not installed (scripts/install-deps.sh)"; exit 77; }
fio --enghelp 2>/dev/null | grep -qx '[[:space:]]*rdma' || { echo "SKIP: this fio has no rdma ioengine"; exit 77; }
U="$(cd "$(dirname "$0")/../.." && pwd)/tools/uroce"
export UROCE_LIBDIR=$(cd "$LIBDIR" && pwd)
cd "$E2E_TMP"	# fio lays out no files for the rdma engine, but keep its cwd ours
PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}

# fio_pair NAME VERB BS_KIB SIZE_MIB CLIENT_IODEPTH SERVER_IODEPTH [SERVER_OPTS...]
fio_pair() {
	local name=$1 verb=$2 bs=${3}k size=${4}m qd=$5 sqd=$6 so co ok=1 rs rc
	local n=$(($4 * 1024 / $3)) tag="fio-$$-$1-$RANDOM" p left
	shift 6
	p=$(e2e_port)
	so=$E2E_TMP/$name.srv co=$E2E_TMP/$name.cli
	E2E_KILL_TAG=$tag UROCE_LOG=debug timeout -k 3 "$PAIR_TIMEOUT" \
		"$U" run -- fio --name=srv --ioengine=rdma --port="$p" \
		--rw=read --bs="$bs" --size="$size" --iodepth="$sqd" \
		"$@" >"$so" 2>&1 &
	local sp=$!
	sleep 1
	E2E_KILL_TAG=$tag timeout -k 3 "$PAIR_TIMEOUT" \
		"$U" run -- fio --name=cli --ioengine=rdma \
		--hostname=127.0.0.1 --port="$p" --rw=write --bs="$bs" \
		--size="$size" --verb="$verb" --iodepth="$qd" \
		${VERIFY_CLIENT:+--verify=crc32c --do_verify=0} >"$co" 2>&1
	rc=$?
	((rc == 0)) || kill "$sp" 2>/dev/null
	wait "$sp"
	rs=$?
	left=$(e2e_kill_tagged "$tag")
	((rc == 0 && rs == 0)) || ok=0
	if ((left)); then
		ok=0
		echo "  killed $left processes of the pair left running"
	fi
	# every block issued (and, for SEND, received and verified)
	grep -q "issued rwts: total=0,$n," "$co" || { ok=0; echo "  client did not write $n blocks"; }
	if [[ $verb == send ]] && ! grep -q "issued rwts: total=$n," "$so"; then
		ok=0
		echo "  server did not receive $n blocks"
	fi
	if grep -hE "completion status|verify:|err= *[1-9]" "$so" "$co" | head -n 5 | grep .; then
		ok=0
	fi
	if ((ok)); then
		e2e_pass "$name"
	else
		e2e_fail "$name (server rc=$rs, client rc=$rc)"
		grep -h "receive queue empty" "$so" | head -n 3
		tail -n 15 "$so" "$co"
	fi
}

# SEND: the server's iodepth is the run's block count (at most 512, fio's
# limit), so its receive queue never runs dry (see above)
VERIFY_CLIENT=1 fio_pair fio_send_4k send 4 2 4 512 --verify=crc32c
VERIFY_CLIENT=1 fio_pair fio_send_64k send 64 16 4 256 --verify=crc32c
VERIFY_CLIENT=1 fio_pair fio_send_1m send 1024 32 2 32 --verify=crc32c
fio_pair fio_write_64k write 64 64 4 8
fio_pair fio_read_64k read 64 32 4 8
e2e_summary
