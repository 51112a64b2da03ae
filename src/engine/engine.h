/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine/: the software NIC. Requester, responder and completer per QP,
 * retransmit and RNR timers, and the progress thread that serves one-sided
 * operations while the application never calls the library.
 *
 * What api/ calls. obj/ has already validated and applied the change; these
 * tell the engine about it.
 */
#ifndef UR_ENGINE_ENGINE_H
#define UR_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdio.h>
#include "obj/obj.h"

/* First open of a device starts its NIC (link + progress thread); the last
 * close stops it. Return 0 or -errno. */
int ur_nic_get(struct ur_device *dev);
void ur_nic_put(struct ur_device *dev);

/* Per-QP transport state: allocated after obj/ created the QP, freed before
 * obj/ destroys it (destroy flushes nothing: the QP is gone). */
int ur_engine_qp_init(struct ur_qp *qp);
void ur_engine_qp_fini(struct ur_qp *qp);

/*
 * UD multicast: attaches qp to the group of the multicast GID gid (the
 * first QP of a device makes its link join the IP group) or detaches it
 * (the last one leaves). Attaching twice is one attachment. 0, -ENOMEM
 * past obj/limits.h's UR_MAX_MCAST_*, -EINVAL (detach: not attached;
 * attach: no address of the group's IP family), or -errno from the link.
 * api/ checks the QP type and the GID first.
 */
int ur_engine_mcast_attach(struct ur_qp *qp, const uint8_t gid[16]);
int ur_engine_mcast_detach(struct ur_qp *qp, const uint8_t gid[16]);

/*
 * ibv_modify_qp holds these around obj/'s change and the engine's (the
 * lock of the QP's receive shard, then qp->sq_lock): a packet, and a post
 * from another
 * thread, find the QP before the change or after all of it, never in its
 * new state with the old PSNs and path.
 */
void ur_engine_qp_lock(struct ur_qp *qp);
void ur_engine_qp_unlock(struct ur_qp *qp);

/*
 * After obj/ changed qp->state from old_state (attr_mask as given), under
 * ur_engine_qp_lock: to RESET clears the transport state, to RTR/RTS picks
 * up AV, PSNs and timers, to ERR flushes every outstanding WQE with
 * IBV_WC_WR_FLUSH_ERR.
 */
void ur_engine_qp_modified(struct ur_qp *qp, enum ibv_qp_state old_state,
			   int attr_mask);

/* WQEs were added to the SQ (qp->sq_lock held by the caller): run the
 * requester now, from the caller's thread. */
void ur_engine_sq_kick(struct ur_qp *qp);
/* Releases qp->sq_lock after ur_engine_sq_kick: the packets the requester
 * built leave now, after the lock is released (so a thread processing an
 * ACK for the QP never waits for this thread's system call). */
void ur_engine_sq_unlock(struct ur_qp *qp);
/* WQEs were added to the RQ/SRQ: lets a QP in ERR flush them, and wakes a
 * responder waiting for receive buffers (RNR). */
void ur_engine_rq_kick(struct ur_qp *qp);
/* A same-host peer's SEND completions, drained from qp's shared RQ
 * (obj/rq_ring.c), overran its CQ: the QP fails (class G, as the
 * responder fails it; engine/direct_send.c). */
void ur_engine_rq_overrun(struct ur_qp *qp);

/*
 * An MR's keys for same-host peers (engine/direct.c): publish after
 * ibv_reg_mr and after ibv_rereg_mr (whatever its outcome); withdraw
 * before ibv_rereg_mr and ibv_dereg_mr (republish if the deregistration
 * failed). Withdraw returns once no peer copies into the MR any more.
 */
void ur_engine_mr_publish(struct ur_mr *mr);
void ur_engine_mr_withdraw(struct ur_mr *mr);

/* Process whatever has arrived for dev without blocking (poll_cq calls this
 * when it finds the CQ empty). Returns the number of packets handled. */
int ur_engine_poll(struct ur_device *dev);
/* The same for a poll_cq on cq: only the receive shards of its QPs (and
 * shard 0 while it receives the same-host ring or multicast groups). */
int ur_engine_poll_cq(struct ur_device *dev, struct ur_cq *cq);
/* poll_cq returned completions; one_sided: one completes a WRITE, READ or
 * atomic of ours. progress.c says what this may do. */
void ur_engine_poll_done(struct ur_device *dev, bool one_sided);

/* The application is about to block for a completion event (it armed a
 * CQ of dev, or waits on a completion channel): its spin on poll_cq, if
 * any, is over, and the progress thread must receive for it again. */
void ur_engine_event_wait(struct ur_device *dev);

/* Counters (drops by reason and link statistics) as text, one per line. */
void ur_engine_dump_counters(struct ur_device *dev, FILE *out);
/* One QP's live PSNs and counters as " name value" pairs on the current
 * line (the device tree's qp/<dev>). qp->sq_lock held. */
void ur_engine_dump_qp(struct ur_qp *qp, FILE *out);
/* Writes the counters where UROCE_STATS says, once per NIC (the last close
 * or the exit handler, whichever comes first). dev->lock held. */
void ur_engine_write_stats(struct ur_device *dev);

#endif
