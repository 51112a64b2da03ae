#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What a user watches while programs run: a hw_counters file read with cat
# changes while ib_write_bw runs, `uroce stat PID` shows the live counters
# and the process's connected RC QP,
# `uroce devices` lists the two running processes and no device of its own,
# GIDs as addresses; a process killed with SIGKILL
# leaves a UROCE_PCAP capture tshark reads and a device tree the next
# `uroce` command removes; UROCE_STATS is written at exit by a process that
# never closes its device. About 15 s.
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest not installed"; exit 77; }
e2e_runtime_dir

# wait_tree PID: until the process has published its device tree
wait_tree() {
	for _ in $(seq 50); do
		[[ -d $ROOT/$1/sys/class/infiniband/uroce0/ports/1/hw_counters ]] && return 0
		sleep 0.1
	done
	return 1
}

# wait_listen PORT: until perftest's server listens on its TCP port (a
# loaded machine may take seconds to start it; a client that comes first
# gives up at once)
wait_listen() {
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# --- live counters of a running ib_write_bw ------------------------------
# as packets: a same-host WRITE is otherwise a copy the target never sees
p=$(e2e_port)
export UROCE_LINK=rings
"$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 8 >"$E2E_TMP/srv" 2>&1 &
srv=$!
wait_listen "$p"
"$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 8 127.0.0.1 >"$E2E_TMP/cli" 2>&1 &
cli=$!
if wait_tree "$srv" && wait_tree "$cli"; then
	# the first reading once traffic flows (a loaded machine may take
	# seconds to connect), then another half a second later
	f=$ROOT/$srv/sys/class/infiniband/uroce0/ports/1/hw_counters/rcvd_pkts
	for _ in $(seq 50); do
		a=$(cat "$f")
		((a > 0)) && break
		sleep 0.1
	done
	sleep 0.5; b=$(cat "$f")
	if ((b > a && a > 0)); then e2e_pass hw_counters_live; else e2e_fail hw_counters_live "rcvd_pkts $a then $b"; fi
	"$U" stat "$srv" >"$E2E_TMP/stat" 2>&1
	if grep -q "^pid $srv " "$E2E_TMP/stat" && grep -qE "^ +rx_pkts +[1-9]" "$E2E_TMP/stat" &&
	   ! grep -qE "^ +rcvd_pkts " "$E2E_TMP/stat" &&
	   grep -qE "^ +lqpn [0-9]+ type RC state RT[RS] rqpn [0-9]+ " "$E2E_TMP/stat" &&
	   ! grep -q "^pid $cli " "$E2E_TMP/stat"; then
		e2e_pass uroce_stat_pid
	else
		e2e_fail uroce_stat_pid "$(head -20 "$E2E_TMP/stat")"
	fi
	"$U" devices >"$E2E_TMP/devices" 2>&1
	if grep -q "^process $srv (ib_write_bw)" "$E2E_TMP/devices" &&
	   grep -qE "^    GID 0 127\.[0-9]+\.[0-9]+\.[0-9]+ \(RoCE v2, lo\)$" "$E2E_TMP/devices" &&
	   (($(grep -c "^process " "$E2E_TMP/devices") == 2)); then
		e2e_pass uroce_devices_lists_process
	else
		e2e_fail uroce_devices_lists_process "$(head -30 "$E2E_TMP/devices")"
	fi
else
	e2e_fail hw_counters_live "no device tree"
fi
wait "$srv"; rs=$?
wait "$cli"; rc=$?
((rs == 0 && rc == 0)) && e2e_pass ib_write_bw_ran || e2e_fail ib_write_bw_ran "rc $rs/$rc: $(tail -5 "$E2E_TMP/cli")"
[[ ! -e $ROOT/$srv && ! -e $ROOT/$cli ]] && e2e_pass trees_removed_at_exit || e2e_fail trees_removed_at_exit "$(ls "$ROOT")"

# --- SIGKILL: pcap readable, tree removed by the next uroce command ------
p=$(e2e_port)
"$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 6 >"$E2E_TMP/srv2" 2>&1 &
srv=$!
wait_listen "$p"
UROCE_PCAP=$E2E_TMP/killed.pcap "$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 6 -s 1024 127.0.0.1 >"$E2E_TMP/cli2" 2>&1 &
cli=$!
# kill it in the middle of the transfer: once its capture has some packets
for _ in $(seq 100); do
	(($(stat -c %s "$E2E_TMP/killed.pcap" 2>/dev/null || echo 0) > 20000)) && break
	sleep 0.1
done
kill -9 "$cli"
wait "$cli" 2>/dev/null
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
if command -v tshark >/dev/null; then
	n=$(tshark -r "$E2E_TMP/killed.pcap" -Y infiniband 2>"$E2E_TMP/tshark.err" | wc -l)
	if ((n > 10)) && ! grep -qi "cut short\|appears to be damaged" "$E2E_TMP/tshark.err"; then
		e2e_pass pcap_after_sigkill
	else
		e2e_fail pcap_after_sigkill "$n packets; $(head -3 "$E2E_TMP/tshark.err")"
	fi
else
	e2e_skip pcap_after_sigkill "no tshark"
fi
if [[ -d $ROOT/$cli ]]; then
	"$U" stat >/dev/null 2>&1
	[[ ! -e $ROOT/$cli ]] && e2e_pass killed_tree_removed || e2e_fail killed_tree_removed "$(ls "$ROOT")"
else
	e2e_fail killed_tree_removed "SIGKILLed process left no tree to remove"
fi

# --- UROCE_STATS at exit without ibv_close_device -------------------------
UROCE_STATS=$E2E_TMP/stats LD_LIBRARY_PATH=$LIBDIR python3 -c '
import ctypes
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_open_device.restype = ctypes.c_void_p
assert lib.ibv_open_device(ctypes.c_void_p(lib.ibv_get_device_list(None)[0]))
' && grep -q "^tx_pkts 0$" "$E2E_TMP/stats" && e2e_pass stats_at_exit_without_close ||
	e2e_fail stats_at_exit_without_close "$(head -3 "$E2E_TMP/stats" 2>&1)"
e2e_summary
