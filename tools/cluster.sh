# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# `uroce cluster`: N hosts in one box. Each host is a network namespace
# with one veth interface and one address of a private subnet; the other
# ends of the veth pairs are ports of a Linux bridge in a namespace of its
# own (the switch). tbf on both ends of each link gives it a rate and a
# queue: a host's own egress (its NIC) and the switch port towards it,
# where incast queues build as in a real switch. Delay, loss and the rest
# come from uroce's fault layer (UROCE_FAULT, per host). Programs run on
# the hosts through `uroce run`, with UROCE_ADDRS set to the host's
# address; everything the command made is removed when it ends, however
# it ends, and the leftovers of a run that was killed (SIGKILL) are
# removed by the next.
#
# Sourced by tools/uroce for this command alone (uroce(1), NOTES), with
# the launcher's die, need_libdir, clean_stale and $libdir; `set -euo
# pipefail` holds here too.
# shellcheck disable=SC2154 # $libdir: the launcher's

cluster_usage() {
	cat <<'USAGE'
usage: uroce cluster [-n N] [--rate [HOSTS:]RATE] [--queue [HOSTS:]SIZE]
                     [--mtu MTU] [--fault [HOSTS:]SPEC] [--addrs K]
                     [--timeout SECS] [--output DIR] [--keep]
                     [--host HOSTS 'COMMAND']... [-- PROGRAM [ARGS...]]

As root: starts N hosts, network namespaces uroce-PID-h0..., joined by a
bridge in the namespace uroce-PID-sw; host I has the addresses
10.77.K.(I+1), K = 0..3, inside its namespace only. Runs PROGRAM on every
host and each COMMAND (sh -c) on HOSTS, all at once, each through `uroce
run` with its own address in UROCE_ADDRS (the K-th program of a host gets
10.77.K.(I+1)); waits for all; removes every namespace, link and file it
made, however it ends. A failing program stops the others.

  -n, --hosts N     number of hosts, 1..64 (default 2)
  --rate RATE       tbf on both ends of every link (the host's eth0, the
                    switch's port to it), as tc(8) writes rates (1gbit,
                    500mbit; default: none, the veth's own speed)
  --queue SIZE      tbf queue of each link end, bytes or tc(8) sizes
                    (48kb = 49152 bytes; default 48000); needs --rate
  --mtu MTU         MTU of every link, 576..65535 (default 1500)
  --fault SPEC      UROCE_FAULT of every program (uroce --help), e.g.
                    drop=0.01 or delay_us=500: uroce's datagrams only;
                    program K of host I draws with the spec's seed
                    (default 1) plus 64*I+K
  --addrs K         addresses, and so programs, per host, 1..64 (default 4)
  --timeout SECS    stop everything after SECS seconds (exit 124)
  --output DIR      each program's output to DIR/hI.K.log
  --keep            keep the hosts after the programs end (or with none)
                    until SIGINT or SIGTERM; their names go to stderr
  --host HOSTS 'COMMAND'
                    run the shell command COMMAND on HOSTS: a host number,
                    a range I-J, or a list of them (0,2-3); --rate, --queue
                    and --fault take HOSTS: first for those hosts only

Each program gets UROCE_ADDRS, UROCE_CLUSTER_HOST (its host's number),
UROCE_CLUSTER_PROGRAM (its K), UROCE_CLUSTER_HOSTS (N),
UROCE_CLUSTER_ADDRS (each host's first address, in host order),
UROCE_CLUSTER_ADDR_I (host I's first address), UROCE_CLUSTER_HOST_ADDRS
(its host's addresses), UROCE_CLUSTER_NAME (uroce-PID), UROCE_CLUSTER_RSH
(the remote shell for mpirun: --mca plm_rsh_agent "$UROCE_CLUSTER_RSH"
--host h0,h1,...), and stdin from /dev/null; host I's name is hI.
Exit status: 0, the first failed program's, 124 (--timeout),
1 (not root, or a namespace, link or qdisc that could not be made), 2 (a
mistake in the command line). See uroce(1).
USAGE
}

# cluster_value OPT ARGC VALUE: an option's value, or a one-line error
cluster_value() {
	local opt=$1 n=$2 v=${3:-}
	((n >= 2)) && [[ -n $v && $v != --* ]] ||
		die "cluster: $opt needs a value${v:+ (got option '$v')}"
}

# cluster_hosts WHAT LIST: the host numbers LIST names, in cl_list, or a
# one-line error naming WHAT (not in a subshell: the error must exit)
cl_list=()
cluster_hosts() {
	local what=$1 list=$2 part a b
	local -a parts
	cl_list=()
	[[ $list =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
		die "cluster: $what: '$list' is not a host list (I, I-J, I,J-K)"
	IFS=, read -ra parts <<<"$list"
	for part in "${parts[@]}"; do
		a=${part%-*} b=${part#*-}
		a=$((10#$a)) b=$((10#$b))
		((a <= b && b < cl_n)) ||
			die "cluster: $what: '$part' is not a host of 0..$((cl_n - 1))"
		for ((; a <= b; a++)); do cl_list+=("$a"); done
	done
}

# cluster_per_host NAME ENTRY...: sets NAME[I] for every host from the
# entries "[HOSTS:]VALUE" (OPTION<TAB>ENTRY), later ones winning
# shellcheck disable=SC2034 # map: a name for the caller's array
cluster_per_host() {
	local -n map=$1
	local e opt v h
	shift
	for e in "$@"; do
		opt=${e%%$'\t'*} v=${e#*$'\t'}
		if [[ $v =~ ^([0-9][0-9,-]*):(.*)$ ]]; then
			v=${BASH_REMATCH[2]}
			cluster_hosts "$opt" "${BASH_REMATCH[1]}"
			for h in "${cl_list[@]}"; do map[h]=$v; done
		else
			for ((h = 0; h < cl_n; h++)); do map[h]=$v; done
		fi
	done
}

# The check of a fault spec's form (key=value,...); the library checks the
# keys and values when each host opens its device, and the spec is tried
# once here (cluster_try_fault) so that a bad one stops the command first.
cluster_check_fault() {
	[[ $1 =~ ^[a-z_]+=[0-9A-Za-z.+-]+(,[a-z_]+=[0-9A-Za-z.+-]+)*$ || $1 == off ]] ||
		die "cluster: --fault: '$1' is not KEY=VALUE,... (uroce --help: UROCE_FAULT)"
}

# cluster_fault_seed SPEC I: SPEC with the seed of a host's program I
# (the spec's, or 1, plus I)
cluster_fault_seed() {
	local spec=$1 i=$2 out="" kv seed=1
	local -a kvs
	[[ $spec != off ]] || { echo off; return; }
	IFS=, read -ra kvs <<<"$spec"
	for kv in "${kvs[@]}"; do
		if [[ $kv == seed=* ]]; then
			seed=${kv#seed=}
		else
			out+=",$kv"
		fi
	done
	# decimal or 0x hex, as the library reads it; anything else is left
	# for the library to refuse
	if [[ $seed =~ ^[0-9]{1,18}$ ]]; then
		seed=$((10#$seed + i))
	elif [[ $seed =~ ^0[xX][0-9a-fA-F]{1,15}$ ]]; then
		seed=$((seed + i))
	fi
	echo "seed=$seed$out"
}

# The library's own verdict on a spec: a device opened with it in this
# namespace, on a private loopback address. One line: the library's.
cluster_try_fault() {
	local spec=$1 err
	[[ $spec != off && -x $libdir/uroce-hold ]] || return 0
	err=$(env -u UROCE_STATS -u UROCE_PCAP UROCE_LOG=error UROCE_FAULT="$spec" \
		UROCE_LINK=udp UROCE_ADDRS= "$libdir/uroce-hold" true 2>&1 >/dev/null) &&
		[[ -z $err ]] && return 0
	err=$(grep -m1 -i 'UROCE_FAULT' <<<"$err" || head -n 1 <<<"$err")
	die "cluster: --fault: '$spec': ${err#*UROCE_FAULT: }"
}

# ---- the namespaces ---------------------------------------------------------

cl_prefix=""		# uroce-PID
cl_made=()		# namespaces made, the switch last
cl_inodes=()		# their network namespace inodes (for /dev/shm)
cl_down_done=0
cl_sleep=""		# --keep's sleep

# cluster_kill_ns NS...: every process inside the namespaces, SIGTERM and
# after 2 s SIGKILL; returns once they are gone (a process keeps its
# namespace, and so the veth, alive)
cluster_kill_ns() {
	local ns t
	local -a pids p
	for t in TERM TERM TERM TERM TERM TERM TERM TERM TERM TERM \
		 KILL KILL KILL KILL KILL KILL KILL KILL KILL KILL; do
		pids=()
		for ns in "$@"; do
			[[ -e /run/netns/$ns ]] || continue
			read -ra p -d '' < <(ip netns pids "$ns" 2>/dev/null) || :
			pids+=("${p[@]}")
		done
		((${#pids[@]})) || return 0
		kill -"$t" "${pids[@]}" 2>/dev/null || :
		sleep 0.2
	done
}

# cluster_del_ns NS...: the namespaces, after their processes, and
# the same-host rings their processes left in /dev/shm
cluster_del_ns() {
	local ns ino
	cluster_kill_ns "$@"
	for ns in "$@"; do
		ino=$(stat -L -c %i "/run/netns/$ns" 2>/dev/null) || ino=""
		ip netns del "$ns" 2>/dev/null || :
		[[ -z $ino ]] || rm -f /dev/shm/uroce-*-"$ino"-* 2>/dev/null || :
	done
}

# The namespaces of runs that were killed before their trap ran: those of
# a PID that is gone (or this one: nothing is made yet).
cluster_clean_stale() {
	local ns p
	local -a stale=()
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		[[ $ns =~ ^uroce-([0-9]+)-(sw|h[0-9]+)$ ]] || continue
		p=${BASH_REMATCH[1]}
		[[ $p == "$$" || ! -d /proc/$p ]] && stale+=("$ns")
	done
	((${#stale[@]} == 0)) || cluster_del_ns "${stale[@]}"
}

cluster_down() {
	((cl_down_done)) && return 0
	cl_down_done=1
	trap '' INT TERM HUP
	local ns ino
	[[ -z $cl_sleep ]] || kill "$cl_sleep" 2>/dev/null || :
	((${#cl_made[@]})) && cluster_kill_ns "${cl_made[@]}"
	for ns in "${cl_made[@]}"; do
		ip netns del "$ns" 2>/dev/null || :
	done
	for ino in "${cl_inodes[@]}"; do
		rm -f /dev/shm/uroce-*-"$ino"-* 2>/dev/null || :
	done
	clean_stale 2>/dev/null || :
}

# cluster_ip WHAT CMD...: runs an ip/tc command; a failure is a one-line
# error naming WHAT with the tool's message, after the teardown (EXIT trap)
cluster_ip() {
	local what=$1 err
	shift
	err=$("$@" 2>&1) && return 0
	echo "uroce: cluster: $what: ${err%%$'\n'*}" >&2
	exit 1
}

# tbf drops a packet larger than its bucket: the bucket holds at least
# one frame and 4000 bytes (what bench/loss.sh and the soak use)
cluster_tbf() {
	local ns=$1 dev=$2 rate=$3 queue=$4 burst=$((cl_mtu + 1000))
	((burst >= 4000)) || burst=4000
	cluster_ip "tbf on $dev in $ns" tc -n "$ns" qdisc add dev "$dev" root \
		tbf rate "$rate" burst "$burst" limit "$queue"
}

# cluster_addr HOST K: the host's K-th address (of its program K)
cluster_addr() {
	echo "10.77.$2.$(($1 + 1))"
}

# cluster_rps NS DEV: receive packet steering on DEV, over every CPU (at
# most the first 32). A veth hands a packet to the backlog of the CPU that
# sends it, and a tbf is emptied by whichever CPU its timer fires on, so
# without RPS two CPUs reorder a flow, which a wire never does (uroce's
# RC responder then sees a gap, NAKs and is sent data again); RPS keeps
# each flow on one CPU's backlog. A kernel without RPS goes without.
cluster_rps() {
	local n
	n=$(nproc 2>/dev/null) || n=1
	((n > 1)) || return 0
	((n <= 32)) || n=32
	ip netns exec "$1" sh -c "echo $(printf %x $(((1 << n) - 1))) >/sys/class/net/$2/queues/rx-0/rps_cpus" \
		2>/dev/null || :
}

cluster_up() {
	local sw=$cl_prefix-sw h k ns
	cl_made=("$sw")
	cluster_ip "namespace $sw" ip netns add "$sw"
	cluster_ip "bridge in $sw" ip -n "$sw" link add br0 type bridge
	cluster_ip "bridge in $sw" ip -n "$sw" link set br0 up
	for ((h = 0; h < cl_n; h++)); do
		ns=$cl_prefix-h$h
		cl_made=("$ns" "${cl_made[@]}")
		cluster_ip "namespace $ns" ip netns add "$ns"
		cl_inodes+=("$(stat -L -c %i "/run/netns/$ns")")
		# made inside the switch: no name ever exists in this namespace
		cluster_ip "link of $ns" ip -n "$sw" link add "h$h" mtu "$cl_mtu" \
			type veth peer name eth0 netns "$ns" mtu "$cl_mtu"
		cluster_ip "link of $ns" ip -n "$sw" link set "h$h" master br0 up
		for ((k = 0; k < cl_naddr; k++)); do
			cluster_ip "address of $ns" ip -n "$ns" addr add \
				"$(cluster_addr "$h" "$k")/16" dev eth0
		done
		cluster_ip "link of $ns" ip -n "$ns" link set eth0 up
		cluster_ip "loopback of $ns" ip -n "$ns" link set lo up
		cluster_rps "$ns" eth0
		cluster_rps "$sw" "h$h"
		if [[ -n ${cl_rate[h]:-} ]]; then
			cluster_tbf "$ns" eth0 "${cl_rate[h]}" "${cl_queue[h]}"
			cluster_tbf "$sw" "h$h" "${cl_rate[h]}" "${cl_queue[h]}"
		fi
	done
}

# ---- the programs -------------------------------------------------------

# cluster_in HOST CMD...: CMD in host HOST's network namespace and, where
# unshare(1) is there, a UTS namespace of its own named hHOST, so that
# programs that tell hosts apart by name (Open MPI's session directories
# in /tmp, its node list) see N machines, not one
cl_uts=""
cluster_in() {
	local h=$1
	shift
	[[ -n $cl_uts ]] || { command -v unshare >/dev/null && cl_uts=1 || cl_uts=0; }
	if ((cl_uts)); then
		ip netns exec "$cl_prefix-h$h" unshare --uts \
			sh -c 'hostname "$0" && exec "$@"' "h$h" "$@"
	else
		ip netns exec "$cl_prefix-h$h" "$@"
	fi
}

declare -A cl_job_host=()	# pid -> host
declare -A cl_job_what=()	# pid -> what it runs, for messages

# cluster_start HOST K ARGV...: one program on a host, in the background
cluster_start() {
	local h=$1 k=$2 pid i mine=""
	shift 2
	for ((i = 0; i < cl_naddr; i++)); do
		mine+=${mine:+,}$(cluster_addr "$h" "$i")
	done
	local -a env=(UROCE_ADDRS="$(cluster_addr "$h" "$k")"
		      UROCE_CLUSTER_HOST="$h" UROCE_CLUSTER_PROGRAM="$k"
		      UROCE_CLUSTER_HOSTS="$cl_n" UROCE_CLUSTER_NAME="$cl_prefix"
		      UROCE_CLUSTER_ADDRS="$(IFS=,; echo "${cl_addr[*]}")"
		      UROCE_CLUSTER_HOST_ADDRS="$mine"
		      UROCE_CLUSTER_RSH="$cl_self cluster --rsh")
	for ((i = 0; i < cl_n; i++)); do
		env+=("UROCE_CLUSTER_ADDR_$i=${cl_addr[i]}")
	done
	[[ -z ${cl_fault[h]:-} ]] ||
		env+=(UROCE_FAULT="$(cluster_fault_seed "${cl_fault[h]}" $((64 * h + k)))")
	if [[ -n $cl_output ]]; then
		cluster_in "$h" env "${env[@]}" "$cl_self" run -- "$@" \
			</dev/null >"$cl_output/h$h.$k.log" 2>&1 &
	else
		cluster_in "$h" env "${env[@]}" "$cl_self" run -- "$@" </dev/null &
	fi
	pid=$!
	cl_job_host[$pid]=$h
	# what the messages call it: the program, or the command's start
	local what=$1
	[[ $1 != sh || $2 != -c ]] || what=$3
	((${#what} <= 50)) || what="${what:0:47}..."
	cl_job_what[$pid]="'$what'"
}

cluster_kill_hosts() {
	local h
	local -a hosts=()
	for ((h = 0; h < cl_n; h++)); do hosts+=("$cl_prefix-h$h"); done
	cluster_kill_ns "${hosts[@]}"
}

# Waits for every program; the first to fail stops the others. Prints
# nothing when all succeed; returns the status of the command. It polls
# (ten times a second) rather than `wait -n PID...`, which forgets a
# program that ended while another one's end was being handled.
cluster_wait() {
	local pid rc status=0 t0=${EPOCHREALTIME/[.,]/} limit=0
	[[ -z $cl_timeout ]] ||
		limit=$(awk -v s="$cl_timeout" 'BEGIN { printf "%d", s * 1000000 }')
	while ((${#cl_job_host[@]})); do
		for pid in "${!cl_job_host[@]}"; do
			kill -0 "$pid" 2>/dev/null && continue
			wait "$pid" && rc=0 || rc=$?
			if ((rc != 0 && status == 0)); then
				status=$rc
				echo "uroce: cluster: host ${cl_job_host[$pid]}: ${cl_job_what[$pid]} exited with status $rc; stopping the others" >&2
				unset "cl_job_host[$pid]"
				cluster_kill_hosts
				continue
			fi
			unset "cl_job_host[$pid]"
		done
		((${#cl_job_host[@]})) || break
		if ((limit && ${EPOCHREALTIME/[.,]/} - t0 >= limit && status == 0)); then
			echo "uroce: cluster: --timeout: $cl_timeout s passed, stopping every host" >&2
			status=124
			cluster_kill_hosts
		fi
		sleep 0.1
	done
	return "$status"
}

# ---- MPI's remote shell -----------------------------------------------------

# `uroce cluster --rsh HOST COMMAND...`: what mpirun runs instead of ssh
# (--mca plm_rsh_agent "$UROCE_CLUSTER_RSH") to start its daemon on a host
# of the cluster it runs in: COMMAND, as ssh would run it (sh -c of the
# words joined), in the namespace of HOST (hI, I, or an address of host
# I), with the environment a program of that host gets and the host's
# last address (program 0 of host 0 is usually mpirun itself, which holds
# the first), so one rank per host.
cluster_rsh() {
	local name=${UROCE_CLUSTER_NAME:-} host=${1:-} h i k mine=""
	local -a a
	[[ $name =~ ^uroce-[0-9]+$ ]] ||
		die "cluster --rsh: not run by a program of uroce cluster (no UROCE_CLUSTER_NAME)"
	(($# >= 2)) || die "cluster --rsh: usage: uroce cluster --rsh HOST COMMAND..."
	shift
	if [[ $host =~ ^h?([0-9]+)$ ]]; then
		h=$((10#${BASH_REMATCH[1]}))
	elif [[ $host =~ ^10\.77\.[0-9]+\.([0-9]+)$ ]]; then
		h=$((10#${BASH_REMATCH[1]} - 1))
	else
		die "cluster --rsh: '$host' is not a host of the cluster (hI, I, 10.77.K.I+1)"
	fi
	[[ -e /run/netns/$name-h$h ]] || die "cluster --rsh: $name has no host $h"
	IFS=, read -ra a <<<"${UROCE_CLUSTER_HOST_ADDRS:-x,x,x,x}"
	k=${#a[@]}
	for ((i = 0; i < k; i++)); do mine+=${mine:+,}$(cluster_addr "$h" "$i"); done
	cl_prefix=$name
	cluster_in "$h" env UROCE_ADDRS="$(cluster_addr "$h" $((k - 1)))" \
		UROCE_CLUSTER_HOST="$h" UROCE_CLUSTER_PROGRAM=$((k - 1)) \
		UROCE_CLUSTER_HOST_ADDRS="$mine" sh -c "$*"
	exit
}

# ---- the command ----------------------------------------------------------

cluster_cmd() {
	local a k h rc=0 dashdash=0
	local -a rates=() queues=() faults=() host_jobs=() prog=()
	local -a jobs_on=()
	cl_n=2 cl_mtu=1500 cl_timeout="" cl_output="" cl_keep=0 cl_naddr=4
	cl_self=$(readlink -f "$0")
	[[ ${1:-} != --rsh ]] || { shift; cluster_rsh "$@"; }
	while (($#)); do
		case $1 in
		-n|--hosts)
			cluster_value "$1" $# "${2:-}"
			[[ $2 =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 64)) ||
				die "cluster: $1: '$2' is not a number of hosts (1..64)"
			cl_n=$((10#$2)); shift ;;
		--rate|--queue|--fault)
			cluster_value "$1" $# "${2:-}"
			case $1 in
			--rate) rates+=("$1"$'\t'"$2") ;;
			--queue) queues+=("$1"$'\t'"$2") ;;
			--fault) faults+=("$1"$'\t'"$2") ;;
			esac
			shift ;;
		--addrs)
			cluster_value "$1" $# "${2:-}"
			[[ $2 =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 64)) ||
				die "cluster: --addrs: '$2' is not a number of addresses (1..64)"
			cl_naddr=$((10#$2)); shift ;;
		--mtu)
			cluster_value "$1" $# "${2:-}"
			[[ $2 =~ ^[0-9]{3,5}$ ]] && ((10#$2 >= 576 && 10#$2 <= 65535)) ||
				die "cluster: --mtu: '$2' is not an MTU (576..65535)"
			cl_mtu=$((10#$2)); shift ;;
		--timeout)
			cluster_value "$1" $# "${2:-}"
			[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ && ! $2 =~ ^0+(\.0*)?$ ]] ||
				die "cluster: --timeout: '$2' is not a number of seconds"
			cl_timeout=$2; shift ;;
		--output)
			cluster_value "$1" $# "${2:-}"
			cl_output=$2; shift ;;
		--keep) cl_keep=1 ;;
		--host)
			cluster_value "$1" $# "${2:-}"
			(($# >= 3)) && [[ -n $3 ]] ||
				die "cluster: --host $2: no COMMAND given (--host HOSTS 'COMMAND')"
			host_jobs+=("$2" "$3"); shift 2 ;;
		--) shift; dashdash=1; prog=("$@"); break ;;
		-h|--help) cluster_usage; exit 0 ;;
		-*) die "cluster: unknown option '$1' (uroce cluster --help)" ;;
		*) die "cluster: '$1': a PROGRAM goes after -- (uroce cluster [OPTIONS] -- PROGRAM)" ;;
		esac
		shift
	done
	((!dashdash || ${#prog[@]})) ||
		die "cluster: no PROGRAM after -- (uroce cluster [OPTIONS] -- PROGRAM [ARGS...])"
	((${#prog[@]} || ${#host_jobs[@]} || cl_keep)) ||
		die "cluster: nothing to run (-- PROGRAM, --host HOSTS 'COMMAND', or --keep)"

	# per-host settings, checked before anything is made
	declare -ga cl_rate=() cl_queue=() cl_fault=()
	declare -ga cl_addr=()
	for a in "${rates[@]}"; do
		[[ ${a#*$'\t'} =~ ^([0-9][0-9,-]*:)?[0-9]+(\.[0-9]+)?([kmgt]?bit|[kmgt]?bps)$ ]] ||
			die "cluster: --rate: '${a#*$'\t'}' is not a rate (1gbit, 500mbit, 100mbps)"
	done
	for a in "${queues[@]}"; do
		[[ ${a#*$'\t'} =~ ^([0-9][0-9,-]*:)?[0-9]+(b|k|kb|m|mb)?$ ]] ||
			die "cluster: --queue: '${a#*$'\t'}' is not a size in bytes (48000, 48kb, 1mb)"
	done
	((${#queues[@]} == 0 || ${#rates[@]})) ||
		die "cluster: --queue needs --rate (a queue without a rate never fills)"
	cluster_per_host cl_rate "${rates[@]}"
	cluster_per_host cl_queue "${queues[@]}"
	cluster_per_host cl_fault "${faults[@]}"
	for ((h = 0; h < cl_n; h++)); do
		cl_addr[h]=10.77.0.$((h + 1))
		[[ -n ${cl_queue[h]:-} ]] || cl_queue[h]=48000
		[[ -z ${cl_fault[h]:-} ]] || cluster_check_fault "${cl_fault[h]}"
	done
	# one address per program (each binds UDP 4791 on its own)
	for ((h = 0; h < cl_n; h++)); do jobs_on[$h]=$((${#prog[@]} ? 1 : 0)); done
	for ((k = 0; k < ${#host_jobs[@]}; k += 2)); do
		cluster_hosts --host "${host_jobs[k]}"
		for h in "${cl_list[@]}"; do
			jobs_on[$h]=$((jobs_on[$h] + 1))
			((jobs_on[$h] <= cl_naddr)) ||
				die "cluster: host $h runs more programs than it has addresses ($cl_naddr: --addrs)"
		done
	done
	if ((${#prog[@]})); then
		if [[ ${prog[0]} == */* ]]; then
			[[ -f ${prog[0]} && -x ${prog[0]} ]] ||
				{ echo "uroce: cluster: '${prog[0]}' is not an executable file" >&2; exit 126; }
		else
			type -P -- "${prog[0]}" >/dev/null ||
				{ echo "uroce: cluster: '${prog[0]}': no such program in PATH" >&2; exit 127; }
		fi
	fi
	if [[ -n $cl_output ]]; then
		mkdir -p -- "$cl_output" 2>/dev/null && [[ -w $cl_output ]] ||
			die "cluster: --output: '$cl_output' is not a directory this user can write"
	fi

	# (the library's verdict on a spec needs no root: a mistake is
	# reported as one whoever makes it)
	need_libdir
	for ((h = 0; h < cl_n; h++)); do
		[[ -z ${cl_fault[h]:-} ]] || cluster_try_fault "${cl_fault[h]}"
	done
	((EUID == 0)) || { echo "uroce: cluster: needs root (network namespaces, veth links, tc)" >&2; exit 1; }
	for a in ip tc; do
		command -v "$a" >/dev/null ||
			{ echo "uroce: cluster: needs '$a' (iproute2)" >&2; exit 1; }
	done

	cl_prefix=uroce-$$
	trap cluster_down EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	cluster_clean_stale
	cluster_up
	if ((cl_keep)); then
		echo "uroce: cluster: hosts ${cl_prefix}-h0..h$((cl_n - 1))" \
			"(10.77.0.1..${cl_addr[cl_n - 1]}), switch $cl_prefix-sw (bridge br0," \
			"ports h0..h$((cl_n - 1))); SIGINT or SIGTERM removes them" >&2
	fi

	for ((h = 0; h < cl_n; h++)); do jobs_on[$h]=0; done
	if ((${#prog[@]})); then
		for ((h = 0; h < cl_n; h++)); do
			cluster_start "$h" 0 "${prog[@]}"
			jobs_on[$h]=1
		done
	fi
	for ((k = 0; k < ${#host_jobs[@]}; k += 2)); do
		cluster_hosts --host "${host_jobs[k]}"
		for h in "${cl_list[@]}"; do
			cluster_start "$h" "${jobs_on[$h]}" sh -c "${host_jobs[k + 1]}"
			jobs_on[$h]=$((jobs_on[$h] + 1))
		done
	done
	cluster_wait || rc=$?
	if ((cl_keep)); then
		# until a signal: its trap exits, and the EXIT trap tears down
		while :; do
			sleep 3600 &
			cl_sleep=$!
			wait "$cl_sleep" || :
		done
	fi
	exit "$rc"
}
