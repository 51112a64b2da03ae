#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tools/uroce as a command-line tool (issue 25): every mistake (unknown
# option, option without its value, unknown command, extra argument, bad
# address, missing program) gets exactly one line on stderr naming it and
# a non-zero exit, never the usage text or bash's own messages; the
# address check agrees with inet_pton(3), which the library parses
# UROCE_ADDRS with, and the library itself refuses a bad UROCE_ADDRS;
# `uroce devices` shows GIDs as addresses and no device of its own;
# `uroce stat -w` prints time-stamped per-second rates; every counter a
# device publishes is explained in `uroce stat --help` and uroce(7).
# About 10 s (perftest for the rates, python3 for the rest).
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
MAN7="$(cd "$(dirname "$0")/../.." && pwd)/man/uroce.7"

# err_case NAME RC REGEX CMD...: a command-line mistake gets one line on
# stderr and no usage text (lib.sh, e2e_err_case)
err_case() {
	e2e_err_case "$@"
}

# --- usage mistakes -------------------------------------------------------
# regress_launcher_errors: before this test, these printed bash's
# "exec: --bogus: invalid option" or "$2: unbound variable", dumped the
# 64-line usage without saying what was wrong, or exited 0 (stat --bogus,
# devices extra); tools/uroce's rewrite in the commit adding this script.
err_case regress_launcher_errors_unknown_option 2 "^uroce: run: unknown option '--bogus'" \
	"$U" run --bogus true
err_case pcap_without_file 2 "^uroce: run: --pcap needs a value$" "$U" run --pcap
err_case pcap_followed_by_option 2 "^uroce: run: --pcap needs a value \(got option '--'\)" \
	"$U" run --pcap -- true
err_case addr_without_value 2 "^uroce: run: --addr needs a value" "$U" run --addr
err_case addr_empty 2 "^uroce: run: --addr needs a value" "$U" run --addr= true
err_case bad_addr 2 "^uroce: --addr: '1\.2\.3\.4\.5' is not an IPv4 or IPv6 address$" \
	"$U" run --addr 1.2.3.4.5 true
err_case bad_addr_in_list 2 "^uroce: --addr: 'fe80::1::2' is not" \
	"$U" run --addr=127.0.0.1,fe80::1::2 true
err_case bad_env_addrs 2 "^uroce: UROCE_ADDRS: 'nothing' is not an IPv4 or IPv6 address$" \
	env UROCE_ADDRS=127.0.0.1,nothing "$U" run true
err_case addrs_over_limit 2 "^uroce: --addr: 17 addresses, but a device has at most 16 GIDs$" \
	"$U" run --addr "$(seq -s, -f 127.0.1.%g 17)" true
err_case no_program 2 "^uroce: run: no PROGRAM given" "$U" run --stats
err_case no_such_program 127 "^uroce: run: 'no-such-program-here': no such program in PATH$" \
	"$U" run -- no-such-program-here
err_case not_executable 126 "is not an executable file$" "$U" run "$MAN7"
err_case unknown_command 2 "^uroce: unknown command 'frob'" "$U" frob
err_case no_command 2 "^uroce: no command given" "$U"
err_case stat_unknown_option 2 "^uroce: stat: unknown option '--bogus'" "$U" stat --bogus
err_case stat_bad_target 2 "^uroce: stat: 'foo' is neither a PID nor a device name" "$U" stat foo
err_case stat_two_targets 2 "^uroce: stat: one PID or device at most" "$U" stat 1 uroce0
err_case stat_nothing_matches 1 "^uroce: stat: no running uroce process has 999999999 " \
	"$U" stat 999999999
err_case devices_extra 2 "^uroce: devices: takes no arguments \(got 'extra'\)$" "$U" devices extra
err_case libdir_extra 2 "^uroce: libdir: takes no arguments" "$U" libdir x
err_case rundir_extra 2 "^uroce: rundir: takes no arguments" "$U" rundir x
# and what still works
if "$U" run --addr=127.0.0.1,::1 --pcap="$E2E_TMP/x.pcap" -- true &&
   [[ $("$U" libdir) == "$LIBDIR" || $("$U" libdir) -ef $LIBDIR ]] &&
   "$U" --help | grep -q '^usage: uroce run' && "$U" stat --help | grep -q deaf_waits; then
	e2e_pass good_usage_works
else
	e2e_fail good_usage_works
fi

# --- the address check is inet_pton's --------------------------------------
if command -v python3 >/dev/null; then
	addrs=(1.2.3.4 0.0.0.0 01.2.3.4 1.2.3 1.2.3.4.5 256.1.1.1 1.2.3.04
	       :: ::1 1:: fe80::1 fe80::1%lo ::ffff:1.2.3.4 ::ffff:01.2.3.4
	       1:2:3:4:5:6:7:8 1:2:3:4:5:6:7 1:2:3:4:5:6:7:: ::1:2:3:4:5:6:7
	       1:2:3:4:5:6:1.2.3.4 1:2:3:4:5:6:7:1.2.3.4 1::2::3 12345::
	       1:2:3:4:5:6:7:8:9 :1:: 1:::2 ::1.2.3.4 1.2.3.4:: ::1.2.3.4:1
	       ABCD:: : 1:2::3:4:5:6:7:8)
	# inet_pton's verdict on each, 0 (an address) or 2, in one python run
	read -ra libc <<<"$(python3 -c '
import socket, sys
def ok(a):
    for f in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(f, a)
            return "0"
        except OSError:
            pass
    return "2"
print(" ".join(ok(a) for a in sys.argv[1:]))' "${addrs[@]}")"
	bad=""
	for i in "${!addrs[@]}"; do
		"$U" run --addr "${addrs[i]}" true 2>/dev/null
		mine=$?
		[[ $mine == "${libc[i]:-}" ]] || bad+=" ${addrs[i]}(uroce $mine, inet_pton ${libc[i]:-?})"
	done
	[[ -z $bad ]] && e2e_pass addr_check_is_inet_pton || e2e_fail addr_check_is_inet_pton "$bad"
else
	e2e_skip addr_check_is_inet_pton "no python3"
fi

# --- the library refuses a bad UROCE_ADDRS ---------------------------------
# regress_bad_addrs_silent: an unparsable UROCE_ADDRS was a warning and
# the process ran on a private 127.X.Y.Z that reached no peer (fixed by
# "config: an UROCE_ADDRS entry that is not an address is an error").
if command -v python3 >/dev/null; then
	UROCE_ADDRS=1.2.3.4.5 python3 -c '
import ctypes, sys
lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
lib.ibv_get_device_list.restype = ctypes.c_void_p
n = ctypes.c_int(-1)
l = lib.ibv_get_device_list(ctypes.byref(n))
print("list", "NULL" if not l else "set", n.value, ctypes.get_errno())
' >"$E2E_TMP/lib.out" 2>"$E2E_TMP/lib.err"
	if grep -qx "list NULL 0 22" "$E2E_TMP/lib.out" &&
	   grep -q "UROCE_ADDRS: '1.2.3.4.5' is not an IPv4 or IPv6 address" "$E2E_TMP/lib.err" &&
	   grep -q "no uroce device is created" "$E2E_TMP/lib.err"; then
		e2e_pass regress_bad_addrs_silent
	else
		e2e_fail regress_bad_addrs_silent "$(cat "$E2E_TMP/lib.out" "$E2E_TMP/lib.err")"
	fi
else
	e2e_skip regress_bad_addrs_silent "no python3"
fi

# --- devices: the running processes' GIDs as addresses ---------------------
if command -v python3 >/dev/null; then
	cat >"$E2E_TMP/hold.py" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_open_device.restype = ctypes.c_void_p
assert lib.ibv_open_device(ctypes.c_void_p(lib.ibv_get_device_list(None)[0]))
print("open", flush=True)
sys.stdin.read()
PY
	mkfifo "$E2E_TMP/hold.in"
	UROCE_ADDRS=127.0.0.1,::1 "$U" run -- python3 "$E2E_TMP/hold.py" \
		<"$E2E_TMP/hold.in" >"$E2E_TMP/hold.out" 2>&1 &
	hp=$!
	exec 9>"$E2E_TMP/hold.in"
	for _ in $(seq 50); do
		grep -q open "$E2E_TMP/hold.out" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.2
	"$U" devices >"$E2E_TMP/devices" 2>&1
	exec 9>&-
	wait "$hp"
	if grep -q "^process $hp (python3):" "$E2E_TMP/devices" &&
	   grep -qx "    GID 0 127.0.0.1 (RoCE v2, lo)" "$E2E_TMP/devices" &&
	   grep -qx "    GID 1 ::1 (RoCE v2, lo)" "$E2E_TMP/devices" &&
	   (($(grep -c "^process " "$E2E_TMP/devices") == 1)); then
		e2e_pass devices_gids_as_addresses
	else
		e2e_fail devices_gids_as_addresses "$(cat "$E2E_TMP/devices" "$E2E_TMP/hold.out")"
	fi
	"$U" devices >"$E2E_TMP/devices.none" 2>&1
	if grep -q "^no running uroce process" "$E2E_TMP/devices.none" &&
	   ! grep -q "^process " "$E2E_TMP/devices.none" && [[ ! -e $ROOT/$hp ]]; then
		e2e_pass devices_none_running
	else
		e2e_fail devices_none_running "$(cat "$E2E_TMP/devices.none")"
	fi
else
	e2e_skip devices_gids_as_addresses "no python3"
fi

# --- stat -w: rates; every published counter documented --------------------
if command -v ib_write_bw >/dev/null; then
	p=$(e2e_port)
	# as packets (a same-host WRITE is otherwise a copy: no tx_pkts)
	UROCE_LINK=rings "$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 3 >"$E2E_TMP/srv" 2>&1 &
	srv=$!
	sleep 0.5
	UROCE_LINK=rings "$U" run -- ib_write_bw -d uroce0 -x 0 -F -p "$p" -D 3 127.0.0.1 >"$E2E_TMP/cli" 2>&1 &
	cli=$!
	for _ in $(seq 50); do
		[[ -s $ROOT/$cli/qp/uroce0 ]] && break
		sleep 0.1
	done
	names=$(ls "$ROOT/$cli/sys/class/infiniband/uroce0/ports/1/hw_counters" 2>/dev/null)
	timeout 3.5 "$U" stat -w "$cli" >"$E2E_TMP/watch" 2>&1
	wait "$srv" "$cli"
	ts='^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} pid '"$cli"' uroce0'
	# after the totals, only time-stamped lines: no cumulative reprint
	if grep -qE "$ts: .*\btx_pkts [1-9][0-9]*/s" "$E2E_TMP/watch" &&
	   grep -qE "$ts qp [0-9]+: .*\btx_bytes [1-9][0-9]*/s" "$E2E_TMP/watch" &&
	   (($(grep -cE "$ts" "$E2E_TMP/watch") >= 2)) &&
	   (($(grep -c "port 1:" "$E2E_TMP/watch") == 1)) &&
	   ! sed '1,/^  queue pairs:/d' "$E2E_TMP/watch" | grep -vE '^( |[0-9]{2}:)' | grep -q .; then
		e2e_pass stat_watch_rates
	else
		e2e_fail stat_watch_rates "$(head -c 2000 "$E2E_TMP/watch")"
	fi
	# each counter under one name: the rxe copies are left out
	if grep -qE '\b(sent_pkts|rcvd_pkts|duplicate_request)\b' "$E2E_TMP/watch"; then
		e2e_fail stat_one_name_each "$(grep -E 'sent_pkts|rcvd_pkts|duplicate_request\b' "$E2E_TMP/watch" | head -3)"
	else
		e2e_pass stat_one_name_each
	fi
	help=$("$U" stat --help)
	rxe="sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_seq_err send_rnr_err rcvd_rnr_err send_err"
	missing=""
	for n in $names; do
		if [[ $n == drop_* ]]; then
			w=${n#drop_}
		elif [[ " $rxe " == *" $n "* ]]; then
			grep -qw -- "$n" "$MAN7" || missing+=" $n(uroce.7)"
			continue
		else
			w=$n
		fi
		grep -qw -- "$w" <<<"$help" || missing+=" $n(stat --help)"
		grep -qw -- "$w" "$MAN7" || missing+=" $n(uroce.7)"
	done
	if [[ -n $names && -z $missing ]]; then
		e2e_pass counters_documented
	else
		e2e_fail counters_documented "undocumented:${missing:- (no counters read)}"
	fi
else
	e2e_skip stat_watch_rates "perftest not installed"
fi
e2e_summary
