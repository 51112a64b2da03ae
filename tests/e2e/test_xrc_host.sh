#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# An XRC domain file opened by several unmodified processes of this host
# (obj/xrc_host.c): one domain for all of them.
#  - xrc_perftest_two_pairs: two ib_send_bw -c XRC pairs at once, whose
#    servers open one domain file and whose clients another; each domain's
#    registry file is there while they run and gone when they end.
#  - xsrq_pingpong_2clients: ibv_xsrq_pingpong, a server and two clients;
#    the server sends each client's messages through both clients' XRC_RECV
#    QPs, so each client's QP receives requests for the other client's SRQ
#    (obj/xrc_ring.c): all three must print success and exit 0, with no
#    warning that a request for another process's SRQ was refused; and
#    again with -e (each process waits on a completion channel).
set -u
. "$(dirname "$0")/lib.sh"
e2e_libdir "${1:-}"
e2e_runtime_dir

# a sanitized build's runtime first in every program (lib.sh, E2E_PRELOAD)
pre=${E2E_PRELOAD:+LD_PRELOAD=$E2E_PRELOAD}

# any_alive PID...: whether one of them still runs
any_alive() {
	local pid
	for pid in "$@"; do
		kill -0 "$pid" 2>/dev/null && return 0
	done
	return 1
}

selected() {
	if [[ -n ${E2E_CASES:-} && ! $1 =~ ^(${E2E_CASES})$ ]]; then
		E2E_UNSELECTED=$((E2E_UNSELECTED + 1))
		return 1
	fi
}

registry_files() {
	find "$ROOT" -maxdepth 1 -name 'xrcd-*' 2>/dev/null | wc -l
}

# listening PORT: waits up to 10 s for a TCP listener on PORT
listening() {
	local t
	for ((t = 0; t < 100; t++)); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

perftest_two_pairs() {
	local name=xrc_perftest_two_pairs o=$E2E_TMP/pt k p seen=0 rc ok=1
	local pids=() t
	selected $name || return
	for k in 1 2; do
		p=$(e2e_port)
		env $pre E2E_KILL_TAG=$name timeout 60 ib_send_bw -d uroce0 \
			-x 0 -c XRC -n 500 -p "$p" >"$o.srv$k" 2>&1 &
		pids+=($!)
		listening "$p"
		env $pre E2E_KILL_TAG=$name timeout 60 ib_send_bw -d uroce0 \
			-x 0 -c XRC -n 500 -p "$p" 127.0.0.1 >"$o.cli$k" 2>&1 &
		pids+=($!)
	done
	for ((t = 0; t < 600 && !seen; t++)); do
		(($(registry_files) >= 1)) && seen=1
		any_alive "${pids[@]}" || break
		sleep 0.1
	done
	for p in "${pids[@]}"; do
		wait "$p"
		rc=$?
		((rc == 0)) || ok=0
	done
	((seen)) || { ok=0; echo "  no registry file while they ran"; }
	if (($(registry_files) != 0)); then
		ok=0
		echo "  registry files left: $(ls "$ROOT")"
	fi
	if grep -qE -- "$E2E_SANITIZER_RE" "$o".*; then
		ok=0
	fi
	if ((ok)); then
		e2e_pass $name
	else
		e2e_fail $name
		tail -n 5 "$o".*
	fi
}

# xsrq_two_clients NAME [OPTION...]: the three processes with OPTIONs
xsrq_two_clients() {
	local name=$1 o=$E2E_TMP/$1 p i t pid
	shift
	local refused="created by another process"
	local pids=() rcs=() ok=1
	selected $name || return
	p=$(e2e_port)
	local cmd="ibv_xsrq_pingpong -d uroce0 -g 0 -p $p -n 20 -s 4096 -m 1024 $*"
	env $pre E2E_KILL_TAG=$name $cmd -c 2 >"$o.srv" 2>&1 &
	pids+=($!)
	listening "$p"
	for i in 1 2; do
		env $pre E2E_KILL_TAG=$name $cmd 127.0.0.1 >"$o.cli$i" 2>&1 &
		pids+=($!)
	done
	# all end (success or not): at most 30 s
	for ((t = 0; t < 300; t++)); do
		any_alive "${pids[@]}" || break
		sleep 0.1
	done
	e2e_kill_tagged $name >/dev/null
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null
		rcs+=($?)
	done
	# each SRQ's shared file goes with it
	if find "$ROOT" -maxdepth 1 -name 'xsrq-*' 2>/dev/null | grep -q .; then
		ok=0
		echo "  shared SRQ files left: $(ls "$ROOT")"
	fi
	for i in 0 1 2; do
		((rcs[i] == 0)) || ok=0
	done
	for f in "$o.srv" "$o.cli1" "$o.cli2"; do
		grep -q '^success' "$f" || ok=0
	done
	if grep -qE -- "$E2E_SANITIZER_RE" "$o".*; then
		e2e_fail $name "sanitizer report"
	elif grep -q "$refused" "$o".*; then
		e2e_fail $name "a request for another process's SRQ was refused"
		grep -h "$refused" "$o".*
	elif ((ok)); then
		e2e_pass $name
	else
		e2e_fail $name "exit statuses ${rcs[*]}"
		tail -n 8 "$o".*
	fi
}

perftest_two_pairs
# (bash's notices of the programs it killed on stderr: not wanted)
xsrq_two_clients xsrq_pingpong_2clients 2>/dev/null
# completions waited for on a channel: the SRQ's process has a thread
# that takes the other processes' completions (and fires the event)
xsrq_two_clients xsrq_pingpong_2clients_events -e 2>/dev/null
e2e_summary
