/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-device counters: every dropped packet by reason (enum ur_drop_reason
 * of wire/), transport events, and the link's own statistics. Dumped as
 * "name value" lines by ur_engine_dump_counters(), and at the last close
 * when UROCE_STATS=1 (stderr) or UROCE_STATS=<path> (appended); and each
 * QP's share of them, for the device tree's qp/<dev>.
 */
#include <inttypes.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/memguard.h"

const char *const ur_stat_names[UR_STAT__MAX] = {
	[UR_STAT_TX_PKTS] = "tx_pkts",
	[UR_STAT_TX_ERRORS] = "tx_errors",
	[UR_STAT_RX_PKTS] = "rx_pkts",
	[UR_STAT_RETRANSMITS] = "retransmits",
	[UR_STAT_TIMEOUTS] = "timeouts",
	[UR_STAT_SEQ_NAK_SENT] = "seq_nak_sent",
	[UR_STAT_SEQ_NAK_RCVD] = "seq_nak_rcvd",
	[UR_STAT_RNR_NAK_SENT] = "rnr_nak_sent",
	[UR_STAT_RNR_NAK_RCVD] = "rnr_nak_rcvd",
	[UR_STAT_ERR_NAK_SENT] = "err_nak_sent",
	[UR_STAT_ERR_NAK_RCVD] = "err_nak_rcvd",
	[UR_STAT_ACK_SENT] = "ack_sent",
	[UR_STAT_ACK_RCVD] = "ack_rcvd",
	[UR_STAT_DUP_REQ] = "duplicate_requests",
	[UR_STAT_READ_REPLAY] = "read_replays",
	[UR_STAT_ATOMIC_REPLAY] = "atomic_replays",
	[UR_STAT_UD_TOO_BIG] = "ud_too_big",
	[UR_STAT_STALE_RESP] = "stale_responses",
	[UR_STAT_TIMER_WAKEUPS] = "timer_wakeups",
	[UR_STAT_DEAF_WAITS] = "deaf_waits",
	[UR_STAT_WAIT_YIELDS] = "wait_yields",
	[UR_STAT_REORDER_KEPT] = "reorder_kept",
	[UR_STAT_RESENDS] = "selective_resends",
	[UR_STAT_REORDER_CONFLICTS] = "reorder_conflicts",
	[UR_STAT_READ_AHEAD] = "read_resp_ahead",
	[UR_STAT_READ_ASKS] = "read_asks",
	[UR_STAT_DIRECT_WRITES] = "direct_writes",
	[UR_STAT_DIRECT_READS] = "direct_reads",
	[UR_STAT_DIRECT_BYTES] = "direct_bytes",
	[UR_STAT_DIRECT_FALLBACKS] = "direct_fallbacks",
	[UR_STAT_DIRECT_REFUSED] = "direct_refused",
	[UR_STAT_DIRECT_WRITE_IMMS] = "direct_write_imms",
	[UR_STAT_DIRECT_SENDS] = "direct_sends",
	[UR_STAT_DIRECT_SEND_PACKETS] = "direct_send_packets",
	[UR_STAT_XRC_REMOTE_RDMA] = "xrc_remote_rdma",
	[UR_STAT_XRC_REMOTE_REFUSED] = "xrc_remote_refused",
	[UR_STAT_NP_ECN_MARKED] = "np_ecn_marked_roce_packets",
	[UR_STAT_NP_CNP_SENT] = "np_cnp_sent",
	[UR_STAT_RP_CNP_HANDLED] = "rp_cnp_handled",
	[UR_STAT_RP_CNP_IGNORED] = "rp_cnp_ignored",
	[UR_STAT_PACE_WAITS] = "pace_waits",
	[UR_STAT_LOCAL_CONGESTION] = "local_congestion",
	[UR_STAT_SLEEP_TIMERS] = "sleep_timers",
	[UR_STAT_RX_FORWARDED] = "rx_forwarded",
	[UR_STAT_RX_FWD_QUEUED] = "rx_fwd_queued",
};

/* The device counters' names where the meaning is the same. */
static const char *const ur_qstat_names[UR_QSTAT__MAX] = {
	[UR_QSTAT_TX_PKTS] = "tx_pkts",
	[UR_QSTAT_TX_BYTES] = "tx_bytes",
	[UR_QSTAT_RX_PKTS] = "rx_pkts",
	[UR_QSTAT_RX_BYTES] = "rx_bytes",
	[UR_QSTAT_RETRANSMITS] = "retransmits",
	[UR_QSTAT_TIMEOUTS] = "timeouts",
	[UR_QSTAT_SEQ_NAK_SENT] = "seq_nak_sent",
	[UR_QSTAT_SEQ_NAK_RCVD] = "seq_nak_rcvd",
	[UR_QSTAT_RNR_NAK_SENT] = "rnr_nak_sent",
	[UR_QSTAT_RNR_NAK_RCVD] = "rnr_nak_rcvd",
	[UR_QSTAT_DUP_REQ] = "duplicate_requests",
	[UR_QSTAT_ECN_MARKED] = "np_ecn_marked_roce_packets",
	[UR_QSTAT_CNP_SENT] = "np_cnp_sent",
	[UR_QSTAT_CNP_HANDLED] = "rp_cnp_handled",
	[UR_QSTAT_PACE_WAITS] = "pace_waits",
	[UR_QSTAT_LOCAL_CONGESTION] = "local_congestion",
};

void ur_engine_dump_qp(struct ur_qp *qp, FILE *out)
{
	const struct ur_qp_xport *xp = qp->xp;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!xp)
		return;
	/* the requester's PSNs are sq_lock's; the responder's are not */
	if (qp->type != IBV_QPT_UD)
		fprintf(out, " next-psn %u unacked-psn %u", xp->req.psn,
			xp->comp.psn);
	/* cc.c: the PSNs a requester may have unacked */
	if (qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND)
		fprintf(out, " cwnd %u pace-mbps %" PRIu64, ur_cc_window(xp),
			xp->cc.pace_rate * 8 / 1000000);
	for (unsigned int i = 0; i < UR_QSTAT__MAX; i++)
		fprintf(out, " %s %" PRIu64, ur_qstat_names[i],
			atomic_load_explicit(&xp->qcnt.req[i],
					     memory_order_relaxed) +
				atomic_load_explicit(&xp->qcnt.rx[i],
						     memory_order_relaxed));
}

void ur_engine_dump_counters(struct ur_device *dev, FILE *out)
{
	struct ur_nic *nic = dev->nic;
	struct ur_link_stats ls;
	unsigned int i;

	if (!nic)
		return;
	fprintf(out, "# uroce%u engine counters\n", dev->index);
	for (i = 0; i < UR_STAT__MAX; i++)
		fprintf(out, "%s %" PRIu64 "\n", ur_stat_names[i],
			atomic_load(&nic->cnt.stat[i]));
	for (i = 1; i < UR_DROP__MAX; i++)
		fprintf(out, "drop_%s %" PRIu64 "\n", ur_drop_reason_str(i),
			atomic_load(&nic->cnt.drop[i]));
	/* process-wide: peer accesses whose memory faulted (memguard.h) */
	fprintf(out, "mem_faults %" PRIu64 "\n", ur_memguard_faults());
	ur_link_get_stats(nic->link, &ls);
	fprintf(out,
		"link_tx_pkts %" PRIu64 "\nlink_tx_bytes %" PRIu64
		"\nlink_tx_errors %" PRIu64 "\nlink_tx_blocked %" PRIu64
		"\nlink_rx_pkts %" PRIu64
		"\nlink_rx_bytes %" PRIu64 "\nlink_rx_truncated %" PRIu64
		"\nfault_dropped %" PRIu64 "\nfault_duplicated %" PRIu64
		"\nfault_reordered %" PRIu64 "\nfault_corrupted %" PRIu64
		"\nfault_delayed %" PRIu64 "\nfault_ce_marked %" PRIu64
		"\nshm_tx_pkts %" PRIu64
		"\nshm_rx_pkts %" PRIu64 "\nshm_doorbells %" PRIu64
		"\nshm_full_drops %" PRIu64 "\n",
		ls.tx_pkts, ls.tx_bytes, ls.tx_errors, ls.tx_blocked, ls.rx_pkts, ls.rx_bytes,
		ls.rx_truncated, ls.fi_dropped, ls.fi_duplicated,
		ls.fi_reordered, ls.fi_corrupted, ls.fi_delayed, ls.fi_ce_marked,
		ls.shm_tx_pkts, ls.shm_rx_pkts, ls.shm_doorbells,
		ls.shm_full_drops);
}
