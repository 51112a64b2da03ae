#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `uroce cluster` (tools/cluster.sh): its command-line mistakes (one line,
# exit 2; not root: exit 1), then, as root, three hosts behind a bridge
# with tbf at 1 Gbit/s and a 48 KB queue on every link: a 2-to-1 incast
# of examples/rendezvous (every byte checked by its receivers) under 1 %
# loss at the receiving host (the drop counters prove it), a 4-to-1
# incast of ib_write_bw on five hosts (every run's exit status), a
# 4-rank MPI job over
# UCX (every byte checked; mpi/ring.c), what each program finds in its
# environment and its host, a failure stopping the other
# programs with its status, --timeout, SIGTERM, and the leftovers of a
# SIGKILLed run removed by the next. After every run no namespace, link
# or /dev/shm file of it may remain. About 30 s.
set -u
shopt -s nullglob
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir
EXAMPLES="$(dirname "$LIBDIR")/examples"

# --- command-line mistakes (before anything is made; root or not) -----------
e2e_err_case nothing_to_run 2 "^uroce: cluster: nothing to run \(-- PROGRAM" "$U" cluster -n 3
e2e_err_case empty_after_dashdash 2 "^uroce: cluster: no PROGRAM after --" "$U" cluster --
e2e_err_case hosts_zero 2 "^uroce: cluster: -n: '0' is not a number of hosts \(1\.\.64\)$" \
	"$U" cluster -n 0 -- true
e2e_err_case hosts_too_many 2 "^uroce: cluster: --hosts: '65' is not a number" \
	"$U" cluster --hosts 65 -- true
e2e_err_case hosts_not_number 2 "^uroce: cluster: -n: 'x' is not a number" "$U" cluster -n x -- true
e2e_err_case hosts_no_value 2 "^uroce: cluster: -n needs a value$" "$U" cluster -n
e2e_err_case unknown_option 2 "^uroce: cluster: unknown option '--bogus'" "$U" cluster --bogus -- true
e2e_err_case program_before_dashdash 2 "^uroce: cluster: 'true': a PROGRAM goes after --" \
	"$U" cluster true
e2e_err_case host_out_of_range 2 "^uroce: cluster: --host: '3' is not a host of 0\.\.2$" \
	"$U" cluster -n 3 --host 3 true
e2e_err_case host_bad_list 2 "^uroce: cluster: --host: '1-' is not a host list" \
	"$U" cluster --host 1- true
e2e_err_case host_no_command 2 "^uroce: cluster: --host 0: no COMMAND given" "$U" cluster --host 0
e2e_err_case bad_rate 2 "^uroce: cluster: --rate: 'fast' is not a rate" \
	"$U" cluster --rate fast -- true
e2e_err_case queue_without_rate 2 "^uroce: cluster: --queue needs --rate" \
	"$U" cluster --queue 48kb -- true
e2e_err_case bad_mtu 2 "^uroce: cluster: --mtu: '100' is not an MTU" "$U" cluster --mtu 100 -- true
e2e_err_case bad_fault_form 2 "^uroce: cluster: --fault: 'drop' is not KEY=VALUE" \
	"$U" cluster --fault drop -- true
# the library's own verdict on the keys, before any host is made
e2e_err_case bad_fault_key 2 "^uroce: cluster: --fault: 'lose=1': unknown key 'lose'" \
	"$U" cluster --fault lose=1 -- true
e2e_err_case too_many_programs 2 "^uroce: cluster: host 0 runs more programs than it has addresses \(1: --addrs\)$" \
	"$U" cluster --addrs 1 --host 0 true -- true
e2e_err_case bad_timeout 2 "^uroce: cluster: --timeout: '0' is not" "$U" cluster --timeout 0 -- true
e2e_err_case rsh_outside 2 "^uroce: cluster --rsh: not run by a program of uroce cluster" \
	env -u UROCE_CLUSTER_NAME "$U" cluster --rsh h1 true
e2e_err_case rsh_bad_host 2 "^uroce: cluster --rsh: 'x1' is not a host of the cluster" \
	env UROCE_CLUSTER_NAME=uroce-1 "$U" cluster --rsh x1 true
e2e_err_case no_such_program 127 "^uroce: cluster: 'no-such-program-here': no such program in PATH$" \
	"$U" cluster -- no-such-program-here
if command -v setpriv >/dev/null && (($(id -u) == 0)); then
	e2e_err_case not_root 1 "^uroce: cluster: needs root" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$U" cluster -- true
	# regress_fault_key_not_root: the library's check of a spec ran after
	# the root check, so a user who was not root got "needs root" for a
	# bad key ("cluster: a bad --fault key is a usage error for a user who
	# is not root too")
	e2e_err_case regress_fault_key_not_root 2 "^uroce: cluster: --fault: 'lose=1': unknown key 'lose'" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$U" cluster --fault lose=1 -- true
elif (($(id -u) != 0)); then
	e2e_err_case not_root 1 "^uroce: cluster: needs root" "$U" cluster -- true
else
	e2e_skip not_root "no setpriv to drop root"
fi

if (($(id -u) != 0)) || ! command -v tc >/dev/null; then
	e2e_skip cluster_runs "needs root and tc (network namespaces, veth, tbf)"
	e2e_summary
	exit
fi

# --- runs --------------------------------------------------------------------
# What a run may leave: its namespaces, and veth links of its names in
# this namespace (it makes none here, and must keep it so); the same-host
# rings of its hosts are checked by the sigterm case, which knows their
# namespaces' inodes (other work on this machine makes and removes rings
# of its own at any time).
leftovers() {
	ip netns list | awk '{ print $1 }' | grep -E '^uroce-[0-9]+-(sw|h[0-9]+)$'
	ip -o link show type veth | awk -F': ' '{ print "link " $2 }' | grep -E '^link (h[0-9]+|eth0)@'
}
leftovers >"$E2E_TMP/before" 2>/dev/null

# run NAME RC CLUSTER-ARGS...: one `uroce cluster` run, its stderr in
# $E2E_TMP/NAME.err, its programs' logs in $E2E_TMP/NAME/; fails NAME
# unless it exits RC and leaves nothing behind
run() {
	local name=$1 want=$2 rc
	shift 2
	mkdir -p "$E2E_TMP/$name"
	timeout 90 "$U" cluster --output "$E2E_TMP/$name" "$@" 2>"$E2E_TMP/$name.err"
	rc=$?
	if ((rc != want)); then
		e2e_fail "$name: exit status $rc (want $want)" "$(tail -n 5 "$E2E_TMP/$name.err")"
		tail -n 8 "$E2E_TMP/$name"/*.log
		return 1
	fi
	check_clean "$name"
}

check_clean() {
	leftovers >"$E2E_TMP/after" 2>/dev/null
	if ! cmp -s "$E2E_TMP/before" "$E2E_TMP/after"; then
		e2e_fail "$1: left behind" "$(diff "$E2E_TMP/before" "$E2E_TMP/after")"
		return 1
	fi
}

shaping=(-n 3 --rate 1gbit --timeout 60)

# The incast of a self-checking example: host 2 runs two receivers (its
# addresses 10.77.0.3 and 10.77.1.3, one per program), hosts 0 and 1 a
# sender each, 1 % of the datagrams host 2 sends and of those it receives
# dropped. The queue is 256 KB: at 48 KB, with no congestion control, an
# incast under loss can end a connection with RETRY_EXC (docs/cluster.md;
# seen once in 21 runs while the links reordered, before RPS, none in 20
# after), which is the engine's to fix, not this command's to test.
rv=$EXAMPLES/rendezvous
if [[ -x $rv ]]; then
	port=$(e2e_port)
	if UROCE_STATS=1 run incast_rendezvous 0 "${shaping[@]}" --queue 256kb --fault 2:drop=0.01,dir=both \
		--host 2 "$rv -s -p $port" --host 2 "$rv -s -p $((port + 1))" \
		--host 0,1 "$rv -c 10.77.\$UROCE_CLUSTER_HOST.3 -p \$(($port + UROCE_CLUSTER_HOST)) -n 60 -m 256K"; then
		d=$E2E_TMP/incast_rendezvous
		ok=1
		for f in h2.0 h2.1; do
			grep -qE '^fault_dropped [1-9]' "$d/$f.log" || { ok=0; echo "  $f: no fault_dropped"; }
		done
		for f in h0.0 h1.0; do
			grep -qE '^fault_dropped 0$' "$d/$f.log" || { ok=0; echo "  $f: faults where none were asked"; }
		done
		# the receivers checked every byte and said so
		(($(grep -lE 'received 60 messages' "$d"/h2.*.log | wc -l) == 2)) ||
			{ ok=0; grep -v '^[a-z_]* [0-9]*$' "$d"/*.log | head -n 20; }
		((ok)) && e2e_pass incast_rendezvous || e2e_fail incast_rendezvous
	fi
else
	e2e_skip incast_rendezvous "no $rv (build the examples)"
fi

# perftest's 4-to-1 incast through 48 KB queues: four ib_write_bw
# servers on host 4, a client on each of hosts 0 to 3, each run's exit
# status (the cluster's) and every client's report
if command -v ib_write_bw >/dev/null; then
	port=$(e2e_port)
	bw="ib_write_bw -d uroce0 -x 0 -F -s 65536 -n 300 --report_gbits"
	if run incast_perftest 0 -n 5 --rate 1gbit --timeout 60 --queue 48000 \
		--host 4 "$bw -p $port" --host 4 "$bw -p $((port + 1))" \
		--host 4 "$bw -p $((port + 2))" --host 4 "$bw -p $((port + 3))" \
		--host 0-3 "sleep 1; $bw -p \$(($port + UROCE_CLUSTER_HOST)) 10.77.0.5"; then
		if (($(grep -lE '^ *65536 +300 ' "$E2E_TMP"/incast_perftest/h[0-3].0.log | wc -l) == 4)); then
			e2e_pass incast_perftest
		else
			e2e_fail incast_perftest "$(tail -n 5 "$E2E_TMP"/incast_perftest/*.log)"
		fi
	fi
else
	e2e_skip incast_perftest "perftest not installed"
fi

# A 4-rank MPI job over UCX, one rank per host, started by mpirun on host
# 0 through the command's remote shell (UROCE_CLUSTER_RSH); every byte of
# a ring exchange and an all-reduce checked (mpi/ring.c), every rank's
# packets over the links (UROCE_STATS: none through same-host rings)
if command -v mpirun >/dev/null && command -v mpicc >/dev/null &&
   mpicc -O2 -o "$E2E_TMP/ring" "$(dirname "$0")/mpi/ring.c" 2>"$E2E_TMP/mpicc.err"; then
	if UROCE_STATS=$E2E_TMP/mpi.stats run mpi_ring 0 -n 4 --rate 1gbit --timeout 120 \
		--host 0 "mpirun --allow-run-as-root --mca plm_rsh_agent \"\$UROCE_CLUSTER_RSH\" \
			--host h0,h1,h2,h3 -np 4 --mca pml ucx --mca btl self --mca osc ^ucx \
			-x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES=uroce0:1 $E2E_TMP/ring"; then
		n=$(awk '$1 == "link_tx_pkts" && $2 >= 1000 { n++ } END { print n + 0 }' "$E2E_TMP/mpi.stats")
		if grep -qx "ring ok 4 240 111848100" "$E2E_TMP/mpi_ring/h0.0.log" && ((n == 4)) &&
		   ! grep -qE '^shm_tx_pkts [1-9]' "$E2E_TMP/mpi.stats"; then
			e2e_pass mpi_ring
		else
			e2e_fail mpi_ring "$n ranks sent over the links; $(tail -n 5 "$E2E_TMP/mpi_ring/h0.0.log")"
		fi
	fi
else
	e2e_skip mpi_ring "no Open MPI (mpirun, mpicc)"
fi

# What each program sees: its address, the others', its link's MTU and
# tbf (tc shows the queue as the time it holds at the rate: 38000 bytes
# above the 10000-byte bucket at 1 Gbit/s are 304 us)
if run environment 0 -n 3 --rate 0:500mbit --rate 1-2:1gbit --queue 2:64kb --mtu 9000 \
	-- sh -c 'echo "host $UROCE_CLUSTER_HOST of $UROCE_CLUSTER_HOSTS program $UROCE_CLUSTER_PROGRAM addr $UROCE_ADDRS all $UROCE_CLUSTER_ADDRS two $UROCE_CLUSTER_ADDR_2 mine $UROCE_CLUSTER_HOST_ADDRS"
		tc qdisc show dev eth0; ip -o link show dev eth0
		echo "name $(hostname)"
		echo "rps $(cat /sys/class/net/eth0/queues/rx-0/rps_cpus)"
		echo "rps port $(ip netns exec "$UROCE_CLUSTER_NAME-sw" cat /sys/class/net/h$UROCE_CLUSTER_HOST/queues/rx-0/rps_cpus)"'; then
	d=$E2E_TMP/environment
	all=10.77.0.1,10.77.0.2,10.77.0.3
	ok=1 rps=1 names=1
	for h in 0 1 2; do
		grep -qx "host $h of 3 program 0 addr 10.77.0.$((h + 1)) all $all two 10.77.0.3 mine 10.77.0.$((h + 1)),10.77.1.$((h + 1)),10.77.2.$((h + 1)),10.77.3.$((h + 1))" \
			"$d/h$h.0.log" || ok=0
		grep -q "mtu 9000" "$d/h$h.0.log" || ok=0
		(($(nproc) == 1)) || (($(grep -cE '^rps (port )?0*[1-9a-f][0-9a-f,]*$' "$d/h$h.0.log") == 2)) || rps=0
		grep -qx "name h$h" "$d/h$h.0.log" || names=0
	done
	grep -qE 'tbf .*rate 500Mbit burst 10000b lat 608us' "$d/h0.0.log" &&
		grep -qE 'tbf .*rate 1Gbit burst 10000b lat 304us' "$d/h1.0.log" &&
		grep -qE 'tbf .*rate 1Gbit burst 10000b lat 444us' "$d/h2.0.log" || ok=0
	((ok)) && e2e_pass environment || e2e_fail environment "$(cat "$d"/*.log)"
	# regress_links_reorder: two CPUs reordered the flows of a link (a
	# veth queues to the sending CPU's backlog) and uroce's responder
	# NAKed gaps that were no loss, until every link end had RPS ("cluster:
	# receive packet steering on every link")
	((rps)) && e2e_pass regress_links_reorder ||
		e2e_fail regress_links_reorder "$(grep -h '^rps' "$d"/*.log)"
	# regress_one_host_name: every host had the machine's name, and Open
	# MPI's daemons shared one session directory in /tmp (mpi_ring failed
	# in one run of two) until each host had a UTS namespace named hI
	# ("cluster: a remote shell for mpirun, and a host name per host")
	if ! command -v unshare >/dev/null; then
		e2e_skip regress_one_host_name "no unshare(1)"
	elif ((names)); then
		e2e_pass regress_one_host_name
	else
		e2e_fail regress_one_host_name "$(grep -h '^name' "$d"/*.log)"
	fi
fi

# A failing program stops the others (a sleep that would outlast the
# test) and its status is the command's
t0=$SECONDS
if run failure_stops_others 3 -n 2 --host 0 'sleep 0.5; exit 3' --host 1 'exec sleep 60'; then
	if ((SECONDS - t0 < 20)) &&
	   grep -qx "uroce: cluster: host 0: 'sleep 0.5; exit 3' exited with status 3; stopping the others" \
		"$E2E_TMP/failure_stops_others.err"; then
		e2e_pass failure_stops_others
	else
		e2e_fail failure_stops_others "$((SECONDS - t0)) s: $(cat "$E2E_TMP/failure_stops_others.err")"
	fi
fi

t0=$SECONDS
if run timeout 124 -n 2 --timeout 1 -- sleep 60; then
	((SECONDS - t0 < 20)) && grep -q "^uroce: cluster: --timeout: 1 s passed" "$E2E_TMP/timeout.err" &&
		e2e_pass timeout || e2e_fail timeout "$(cat "$E2E_TMP/timeout.err")"
fi

# SIGTERM while the programs run: they are stopped and everything is
# removed, the same-host rings of the hosts' namespaces too (two perftest
# processes on each host talk over 127.0.0.1, on private addresses, and
# a process killed by a signal leaves its ring)
if command -v ib_write_bw >/dev/null; then
	mkdir -p "$E2E_TMP/term"
	"$U" cluster -n 2 --output "$E2E_TMP/term" -- sh -c '
		stat -L -c "netns %i" /proc/self/ns/net
		export UROCE_ADDRS=
		ib_write_bw -d uroce0 -x 0 -F -D 60 -p 18600 &
		sleep 0.5; exec ib_write_bw -d uroce0 -x 0 -F -D 60 -p 18600 127.0.0.1' \
		2>"$E2E_TMP/term.err" &
	cp=$!
	inos="" rings=0
	for _ in $(seq 100); do
		inos=$(cat "$E2E_TMP"/term/h*.log 2>/dev/null | sed -n 's/^netns //p')
		rings=0
		for i in $inos; do
			r=(/dev/shm/uroce-*-"$i"-*)
			rings=$((rings + ${#r[@]}))
		done
		((rings >= 4)) && break
		sleep 0.1
	done
	pids=$(for ns in $(ip netns list | awk '{ print $1 }' | grep "^uroce-$cp-h"); do
		ip netns pids "$ns"; done)
	sleep 0.5
	kill -TERM "$cp"
	wait "$cp"
	rc=$?
	left=""
	for i in $inos; do
		r=(/dev/shm/uroce-*-"$i"-*)
		left+="${r[*]}"
	done
	# (a zombie is gone: this container's init may never reap the
	# servers, orphaned when their shell's exec'd client died)
	for p in $pids; do
		st=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$p/status" 2>/dev/null)
		[[ -z $st || $st == Z ]] || left+=" process $p ($(tr '\0' ' ' <"/proc/$p/cmdline"))"
	done
	if ((rc == 143 && rings >= 4)) && [[ -z $left ]] && check_clean sigterm; then
		e2e_pass sigterm
	else
		e2e_fail sigterm "exit status $rc (want 143), $rings rings of namespaces $inos while running, left: $left"
	fi
else
	e2e_skip sigterm "perftest not installed"
fi

# A run killed by SIGKILL leaves its namespaces; the next run removes them
"$U" cluster -n 2 --keep 2>"$E2E_TMP/kill.err" &
cp=$!
for _ in $(seq 100); do
	grep -qs "SIGTERM removes them" "$E2E_TMP/kill.err" && break
	sleep 0.1
done
kids=$(pgrep -P "$cp")
kill -KILL "$cp"
wait "$cp" 2>/dev/null
# (its --keep sleep, orphaned: ours to end)
[[ -z $kids ]] || kill $kids 2>/dev/null
if (($(ip netns list | grep -c "^uroce-$cp-") == 3)) &&
   run after_sigkill 0 -n 1 -- true; then
	e2e_pass stale_removed
else
	e2e_fail stale_removed "$(ip netns list | grep "^uroce-")"
	for ns in $(ip netns list | awk '{ print $1 }' | grep "^uroce-$cp-"); do
		ip netns del "$ns"
	done
fi
e2e_summary
