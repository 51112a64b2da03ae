/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs_tour: every verbs object a first RDMA program meets, one step at a
 * time, printed as it goes (docs/tutorial.md walks through the output).
 *
 * One process, two RC QPs on the same device connected to each other by
 * hand, with no rdma_cm: what rdma_cm does for the other examples is here
 * in the open. Device, port and GID; a protection domain; memory regions
 * with their lkey and rkey; a completion queue; the QPs taken through
 * RESET -> INIT -> RTR -> RTS (first without a GRH, which RoCE refuses);
 * a SEND into a posted receive, an RDMA WRITE and an RDMA READ, each
 * checked; and an RDMA WRITE with a wrong rkey, to show what a remote
 * access error looks like. Exit status 1 if anything is not as it must be.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#define LEN 4096

static const char *state_str(enum ibv_qp_state s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS",
					 "SQD", "SQE", "ERR" };

	return s <= IBV_QPS_ERR ? n[s] : "?";
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static const char *opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	default: return "other";
	}
}

/* Wait (busy) for one completion on cq and print it. */
static int wait_one(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	time_t deadline = time(NULL) + 10;
	unsigned long n = 0;
	int r;

	while ((r = ibv_poll_cq(cq, 1, wc)) == 0)
		if ((++n & 0xffff) == 0 && time(NULL) > deadline) {
			fprintf(stderr, "verbs_tour: no completion for %s in "
				"10 s\n", what);
			return -1;
		}
	if (r < 0)
		return -1;
	/* (opcode and byte_len are defined only for a successful CQE) */
	printf("  CQE: wr_id %llu, status %s, opcode %s, byte_len %u, "
	       "qp_num %#x\n", (unsigned long long)wc->wr_id,
	       ibv_wc_status_str(wc->status),
	       wc->status ? "-" : opcode_str(wc->opcode),
	       wc->status ? 0 : wc->byte_len, wc->qp_num);
	return 0;
}

static int post1(struct ibv_qp *qp, enum ibv_wr_opcode op, void *buf,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* RTR towards peer; with grh, the GRH addressed to gid from GID index 0. */
static int to_rtr(struct ibv_qp *qp, uint32_t peer, enum ibv_mtu mtu,
		  const union ibv_gid *gid, int grh)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = mtu,
				 .dest_qp_num = peer, .rq_psn = 0,
				 .max_dest_rd_atomic = 1,
				 .min_rnr_timer = 12 };

	a.ah_attr.port_num = 1;
	if (grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14,
				 .retry_cnt = 7, .rnr_retry = 7, .sq_psn = 0,
				 .max_rd_atomic = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int tour(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_mr *mra, *mrb;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	struct ibv_wc wc;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8,
						.max_recv_wr = 8,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	char gs[INET6_ADDRSTRLEN];
	uint8_t *a, *b;
	int n, i, r;

	printf("1. device\n");
	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "verbs_tour: no RDMA device (run it with "
			"tools/uroce run)\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_device(ctx, &da) || ibv_query_port(ctx, 1, &pa) ||
	    ibv_query_gid(ctx, 1, 0, &gid))
		return 1;
	inet_ntop(AF_INET6, gid.raw, gs, sizeof(gs));
	printf("  %s: max_qp %d, max_mr_size %llu, max_qp_rd_atom %d\n",
	       ibv_get_device_name(list[0]), da.max_qp,
	       (unsigned long long)da.max_mr_size, da.max_qp_rd_atom);
	printf("  port 1: %s, active MTU %d bytes, link layer %s\n",
	       ibv_port_state_str(pa.state), 128 << pa.active_mtu,
	       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" :
							  "InfiniBand");
	printf("  GID index 0: %s\n", gs);

	printf("2. protection domain\n");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return 1;
	printf("  allocated: every MR and QP below belongs to it\n");

	printf("3. memory regions\n");
	a = calloc(1, LEN);
	b = calloc(1, LEN);
	if (!a || !b)
		return 1;
	mra = ibv_reg_mr(pd, a, LEN, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(pd, b, LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mra || !mrb)
		return 1;
	printf("  A: %d bytes, lkey %#x, rkey %#x, local access only\n", LEN,
	       mra->lkey, mra->rkey);
	printf("  B: %d bytes, lkey %#x, rkey %#x, remote write and read\n",
	       LEN, mrb->lkey, mrb->rkey);

	printf("4. completion queue\n");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return 1;
	printf("  %d entries, shared by both QPs' send and receive queues\n",
	       cq->cqe);

	printf("5. queue pairs\n");
	ia.send_cq = ia.recv_cq = cq;
	qa = ibv_create_qp(pd, &ia);
	qb = ibv_create_qp(pd, &ia);
	if (!qa || !qb)
		return 1;
	printf("  QP A %#x and QP B %#x created, state %s\n", qa->qp_num,
	       qb->qp_num, state_str(qp_state(qa)));
	if (to_init(qa) || to_init(qb))
		return 1;
	printf("  -> %s (port 1, P_Key index 0, remote access allowed)\n",
	       state_str(qp_state(qa)));
	r = to_rtr(qa, qb->qp_num, pa.active_mtu, &gid, 0);
	if (r)
		printf("  -> RTR without a GRH: %s (RoCE has no LIDs: the "
		       "address must be a GID)\n", strerror(r));
	else
		printf("  -> RTR without a GRH was accepted: not RoCE?\n");
	if (to_rtr(qa, qb->qp_num, pa.active_mtu, &gid, 1) ||
	    to_rtr(qb, qa->qp_num, pa.active_mtu, &gid, 1))
		return 1;
	printf("  -> %s with a GRH to GID index 0, path MTU %d\n",
	       state_str(qp_state(qa)), 128 << pa.active_mtu);
	if (to_rts(qa) || to_rts(qb))
		return 1;
	printf("  -> %s (timeout 14: 67 ms, 7 retries)\n",
	       state_str(qp_state(qa)));

	printf("6. work requests and completions\n");
	/* SEND needs a receive posted first on the other side */
	{
		struct ibv_sge sge = { (uintptr_t)b, LEN, mrb->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge,
					   .num_sge = 1 }, *bad;

		if (ibv_post_recv(qb, &rwr, &bad))
			return 1;
	}
	strcpy((char *)a, "hello, verbs");
	if (post1(qa, IBV_WR_SEND, a, 13, mra->lkey, 0, 0, 2))
		return 1;
	/* two CQEs, in either order: A's SEND and B's RECV */
	for (i = 0, r = 0; i < 2; i++) {
		if (wait_one(cq, &wc, "SEND/RECV") ||
		    wc.status != IBV_WC_SUCCESS)
			return 1;
		if (wc.opcode == IBV_WC_RECV && wc.qp_num == qb->qp_num &&
		    wc.byte_len == 13)
			r |= 1;
		if (wc.opcode == IBV_WC_SEND && wc.qp_num == qa->qp_num)
			r |= 2;
	}
	if (r != 3)
		return 1;
	if (strcmp((char *)b, "hello, verbs"))
		return 1;
	printf("  B received \"%s\"\n", (char *)b);
	for (i = 0; i < LEN; i++)
		a[i] = (uint8_t)(i * 7);
	if (post1(qa, IBV_WR_RDMA_WRITE, a, LEN, mra->lkey, (uintptr_t)b,
		  mrb->rkey, 3) || wait_one(cq, &wc, "RDMA WRITE") ||
	    wc.status != IBV_WC_SUCCESS || memcmp(a, b, LEN))
		return 1;
	printf("  B holds the %d bytes A wrote (B's CPU and receive queue "
	       "not involved: no CQE on B's side)\n", LEN);
	memset(a, 0, LEN);
	if (post1(qa, IBV_WR_RDMA_READ, a, LEN, mra->lkey, (uintptr_t)b,
		  mrb->rkey, 4) || wait_one(cq, &wc, "RDMA READ") ||
	    wc.status != IBV_WC_SUCCESS || memcmp(a, b, LEN))
		return 1;
	printf("  A read the %d bytes back\n", LEN);

	printf("7. a mistake: RDMA WRITE with a wrong rkey\n");
	if (post1(qa, IBV_WR_RDMA_WRITE, a, 64, mra->lkey, (uintptr_t)b,
		  mrb->rkey ^ 0x5a5a00, 5) || wait_one(cq, &wc, "bad WRITE"))
		return 1;
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		return 1;
	printf("  the responder NAKed it; QP A is now %s and flushes what "
	       "is posted after it\n", state_str(qp_state(qa)));

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mra);
	ibv_dereg_mr(mrb);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(a);
	free(b);
	printf("verbs_tour: all steps as expected\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (ch == 'h') {
			printf("usage: verbs_tour\n\nOne process, two RC QPs on "
			       "the first device connected by hand: device, PD,\n"
			       "MRs, CQ, RESET->INIT->RTR->RTS (with and without "
			       "a GRH), SEND, RDMA WRITE,\nRDMA READ and a "
			       "wrong rkey, each step printed "
			       "(docs/tutorial.md).\nExit status 1 if a step "
			       "is not as it must be.\n");
			return 0;
		}
		fprintf(stderr, "usage: verbs_tour\n");
		return 2;
	}
	if (optind != argc) {
		fprintf(stderr, "usage: verbs_tour\n");
		return 2;
	}
	if (tour()) {
		fprintf(stderr, "verbs_tour: a step failed (errno %d: %s)\n",
			errno, strerror(errno));
		return 1;
	}
	return 0;
}
