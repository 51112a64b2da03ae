/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Process configuration from the environment: every UROCE_* variable the
 * libraries read is parsed and validated here, once (first call of
 * ur_config_get(), thread-safe), and is constant afterwards. An empty
 * variable counts as unset. A bad value is reported (name, value, what is
 * accepted) and the default is used instead, except where the default
 * would be the dangerous side (UROCE_HARDENED). `uroce --help` and the
 * README's configuration table list the same variables
 * (tests/check_env_help.sh checks that).
 *
 * A boolean takes 1/0, yes/no, true/false or on/off (any case).
 *
 *   UROCE_ADDRS=a,b,...   IPv4 and/or IPv6 addresses of uroce0, in GID table
 *                         order (GID i is RoCEv2: IPv4 a.b.c.d becomes
 *                         ::ffff:a.b.c.d, IPv6 stays itself). An entry
 *                         that is not an address, or more than
 *                         UR_CONFIG_MAX_ADDRS addresses, is an error
 *                         (addrs_bad): no device is created, see
 *                         parse_devices(). Unset or empty: uroce0
 *                         gets ONE automatic loopback address, 127.X.Y.Z
 *                         with X.Y.Z random (X != 0, so 127.0.0.0/16 and
 *                         127.0.0.1 stay free), so that several processes
 *                         on one host each bind their own <IP>:4791 with no
 *                         setup.
 *   UROCE_NUM_DEVICES=n   number of devices uroce0..uroce<n-1> (default 1,
 *                         1..UR_CONFIG_MAX_DEVICES). Devices after uroce0
 *                         always get one automatic loopback address each.
 *   UROCE_LOG=level       error|warn|info|debug (default warn).
 *   UROCE_STATS=1|path    counters to stderr, or appended to path, at the
 *                         last close of a device or at exit (default off;
 *                         a false boolean is off too).
 *   UROCE_PCAP=path       capture of every datagram; "%p" becomes the pid
 *                         (default off).
 *   UROCE_TRACE=prefix    progress events to prefix.<pid> at exit; only
 *                         in a build configured with -DUROCE_TRACE=ON
 *                         (util/trace.h; default off).
 *   UROCE_FAULT=spec      fault injection, syntax in link/fault.c. Only read
 *                         here: the link parses it when it opens, since
 *                         tests change it at run time (ur_link_set_fault),
 *                         and refuses to open on a bad spec: a fault test
 *                         that silently ran without faults would pass.
 *   UROCE_BUSY_POLL=bool  the progress thread polls a while after traffic
 *                         before it sleeps (default off).
 *   UROCE_POLL_YIELD=bool poll_cq may yield the CPU (default off;
 *                         engine/progress.c, ur_engine_poll_done(), says
 *                         when and why).
 *   UROCE_GSO=bool        send UDP GSO trains (default on).
 *   UROCE_ECN=bool        RoCEv2 packets leave ECN-capable, ECT(0) (default
 *                         on; engine/ecn.c); off leaves the ECN bits of the
 *                         traffic class as the AH or QP gave them.
 *   UROCE_LAZY_DOORBELL=bool  posts may wait for the progress thread
 *                         (default on; engine/qp_xport.c says when).
 *   UROCE_PACE=bool       an RC requester paces what its window releases
 *                         (default on; engine/cc.c).
 *   UROCE_SPIN_US=n       the progress thread keeps polling n µs after
 *                         traffic before it sleeps (0..UR_CONFIG_MAX_US).
 *   UROCE_RX_SHARDS=n     receive shards per device (1..16; unset: the
 *                         engine's default, engine/params.h).
 *   UROCE_QUIET_US=n      an application that polled its CQs in a spin this
 *                         recently keeps the progress thread off the socket
 *                         (0..UR_CONFIG_MAX_US).
 *                         Unset (or bad): UR_CONFIG_DEFAULT, and the engine
 *                         uses its own default, engine/params.h's
 *                         UR_RX_SPIN_NS / UR_APP_POLL_QUIET_NS, which say
 *                         why they have their values.
 *   UROCE_RT_PRIO=n       SCHED_FIFO priority of the progress thread where
 *                         permitted (1..99; default 0 = off).
 *   UROCE_HARDENED=bool   hardened mode for untrusted networks (default
 *                         off). A value that is not a boolean turns it ON:
 *                         whoever set it meant to harden, and falling back
 *                         to off would quietly drop the protection.
 *   UROCE_INTERPOSE=bool  read by the interposer itself (it links none of
 *                         this, see interpose.c), with ur_parse_bool().
 */
#ifndef UR_UTIL_CONFIG_H
#define UR_UTIL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include "util/addr.h"

#define UR_CONFIG_MAX_ADDRS 16
#define UR_CONFIG_MAX_DEVICES 16
#define UR_CONFIG_MAX_US 1000000u	/* spin/quiet above 1 s is a typo */
#define UR_CONFIG_MAX_RT_PRIO 99	/* SCHED_FIFO's range on Linux */
#define UR_CONFIG_MAX_RX_SHARDS 16	/* link.h's UR_LINK_MAX_RXQ */
#define UR_CONFIG_DEFAULT UINT64_MAX	/* not set: the user's layer decides */

enum ur_config_stats {
	UR_STATS_OFF,
	UR_STATS_STDERR,
	UR_STATS_FILE,		/* append to stats_path */
};

struct ur_config {
	/* devices (obj/device.c) */
	unsigned int num_devices;
	unsigned int num_addrs;		/* of uroce0; 0 = automatic */
	bool addrs_bad;			/* UROCE_ADDRS set, not all addresses */
	union ur_sockaddr addrs[UR_CONFIG_MAX_ADDRS];	/* port 0 */
	/* logging (util/log.c; applied by the load) */
	int log_level;			/* enum ur_log_level */
	/* observability */
	enum ur_config_stats stats;
	char *stats_path;		/* UR_STATS_FILE only, else NULL */
	char *pcap;			/* NULL = off; "%p" not expanded */
	char *trace;			/* NULL = off (util/trace.h) */
	char *fault;			/* NULL = off; syntax in link/fault.c */
	/* the engine's progress thread and transmit path */
	bool busy_poll;
	bool poll_yield;
	bool wait_yield;
	bool srq_copy;			/* UROCE_SRQ_COPY (engine/direct.c) */
	bool gso;
	bool ecn;			/* UROCE_ECN: send ECT(0) (engine/ecn.c) */
	bool lazy_doorbell;
	bool pace;			/* UROCE_PACE (engine/cc.c) */
	bool hardened;
	bool same_host;			/* UROCE_LINK: same-host rings (link/) */
	bool direct;			/* UROCE_LINK: same-host copies
					 * (engine/direct.c) */
	uint64_t spin_ns;		/* UROCE_SPIN_US in ns, or UR_CONFIG_DEFAULT */
	uint64_t quiet_ns;		/* UROCE_QUIET_US in ns, or UR_CONFIG_DEFAULT */
	int rt_prio;			/* 0 = off */
	unsigned int rx_shards;		/* UROCE_RX_SHARDS, 0 = the engine's
					 * default */
};

const struct ur_config *ur_config_get(void);

/*
 * Makes this copy's load silent. librdmacm links its own copy of util/ and
 * calls it before its first ur_config_get(): libibverbs' copy, loaded in
 * the same process, reports the same bad values already.
 */
void ur_config_quiet(void);

/*
 * Parses the environment as it is now into *c, with the messages above,
 * without touching the process' configuration or log level. For tests;
 * ur_config_release() frees what it allocated.
 */
void ur_config_parse(struct ur_config *c);
void ur_config_release(struct ur_config *c);

/*
 * Parses a UROCE_ADDRS-style list into out (at most max entries). Returns
 * the number of addresses kept; invalid entries and addresses past max are
 * skipped (invalid ones with a warning). Exposed for tests.
 */
unsigned int ur_config_parse_addrs(const char *list, union ur_sockaddr *out,
				   unsigned int max);

/* A random 127.X.Y.Z with X != 0 (port 0). Returns 0 or -errno. */
int ur_config_auto_addr(union ur_sockaddr *out);

#endif
