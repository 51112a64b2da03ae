/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * threads_bench: does the work of many QPs spread over threads? One
 * process opens the device once; each of T threads builds its own RC QP
 * pair on it (QP a connected to QP b of the same process, through the
 * device's own address, so with UROCE_LINK=udp every packet is a RoCEv2
 * datagram to itself), and writes SIZE-byte RDMA WRITEs from a into b's
 * memory, WINDOW of them in flight, for SECS seconds. When a WRITE
 * completes the thread compares every byte of its target slot with what
 * it sent (each WRITE carries a pattern of its own sequence number, so a
 * stale or misplaced one cannot pass) before it reuses the slot.
 *
 * Prints "threads_<T>_bw GB/s", "threads_<T>_writes" and the process's
 * CPU time on stdout (bench/run.sh records them); exits 1 on any error
 * completion, wrong byte or stall, 2 on bad usage. Only the public verbs
 * API is used.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <infiniband/verbs.h>

#include "common/bench.h"

#define MAX_THREADS 64
#define MAX_WINDOW 256
/* No completion for this long means the pair is stuck, not slow. */
#define STALL_S 15.0

struct opts {
	const char *dev;
	int threads, window;
	uint32_t size;
	double secs;
	int spoil;		/* -X: 1 one wrong byte, 2 one bad rkey */
};

/* the WRITE -X spoils (of thread 0), well after the start */
#define SPOIL_SEQ 100

struct worker {
	int id;
	const struct opts *o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	pthread_t th;
	uint64_t bytes;		/* checked before the stop */
	uint64_t writes;	/* every WRITE checked, the drain included */
	int failed;
};

static pthread_barrier_t start_bar;
static atomic_int stop;
static double t_start;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: threads_bench [-T threads] [-s size] [-w window] [-t secs] [-d device]\n"
		"  -T  threads, each with its own RC QP pair (1..%d; 1)\n"
		"  -s  bytes per RDMA WRITE (4096)\n"
		"  -w  WRITEs in flight per thread (1..%d; 16)\n"
		"  -t  seconds of writing (2)\n"
		"  -d  device (the first one)\n"
		"  -X  spoil on purpose, once (a test of the checks): byte (one\n"
		"      byte of a target slot changed before its check) or rkey\n"
		"      (one WRITE with a wrong rkey: an error completion)\n",
		MAX_THREADS, MAX_WINDOW);
}

/* Slot contents of WRITE seq of thread id: every 8-byte word differs
 * from the same word of any other WRITE. */
static void fill(uint64_t *w, size_t n, int id, uint64_t seq)
{
	uint64_t base = ((uint64_t)id << 48 | seq) * 0x9e3779b97f4a7c15ull;

	for (size_t k = 0; k < n; k++)
		w[k] = base ^ (k * 0xbf58476d1ce4e5b9ull + 1);
}

static int to_rts(struct worker *w, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = w->mtu;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = w->gid;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;		/* perftest's: 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post(struct worker *w, struct ibv_qp *qp, struct ibv_mr *src,
		struct ibv_mr *dst, int slot, uint64_t seq)
{
	size_t sz = w->o->size;
	char *s = (char *)src->addr + (size_t)slot * sz;
	struct ibv_sge sge = {
		.addr = (uintptr_t)s, .length = (uint32_t)sz, .lkey = src->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seq, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {
			.remote_addr = (uintptr_t)dst->addr + (size_t)slot * sz,
			.rkey = dst->rkey,
		},
	}, *bad;

	if (w->o->spoil == 2 && w->id == 0 && seq == SPOIL_SEQ)
		wr.wr.rdma.rkey = ~dst->rkey;

	fill((uint64_t *)s, sz / 8, w->id, seq);
	return ibv_post_send(qp, &wr, &bad);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	size_t len = (size_t)o->window * o->size;
	struct ibv_cq *cqa = NULL, *cqb = NULL;
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_mr *src = NULL, *dst = NULL;
	void *sbuf = NULL, *dbuf = NULL;
	struct ibv_wc wc[16];
	uint64_t next = 0, inflight = 0;
	double last;
	int ready = 0;

	cqa = ibv_create_cq(w->ctx, o->window, NULL, NULL, 0);
	cqb = ibv_create_cq(w->ctx, 4, NULL, NULL, 0);
	if (!cqa || !cqb)
		goto setup;
	struct ibv_qp_init_attr qia = {
		.send_cq = cqa, .recv_cq = cqa, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = o->window, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qa = ibv_create_qp(w->pd, &qia);
	qia.send_cq = qia.recv_cq = cqb;
	qia.cap.max_send_wr = 1;
	qb = ibv_create_qp(w->pd, &qia);
	if (!qa || !qb || posix_memalign(&sbuf, 4096, len) ||
	    posix_memalign(&dbuf, 4096, len))
		goto setup;
	memset(sbuf, 0, len);
	memset(dbuf, 0, len);
	src = ibv_reg_mr(w->pd, sbuf, len, IBV_ACCESS_LOCAL_WRITE);
	dst = ibv_reg_mr(w->pd, dbuf, len,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src || !dst || to_rts(w, qa, qb->qp_num) ||
	    to_rts(w, qb, qa->qp_num))
		goto setup;
	ready = 1;
setup:
	if (!ready) {
		fprintf(stderr, "threads_bench: thread %d: set-up failed: %s\n",
			w->id, strerror(errno));
		w->failed = 1;
	}
	/* every thread reaches the barrier, so a failed one cannot hang it */
	pthread_barrier_wait(&start_bar);
	if (!ready || atomic_load(&stop))
		goto out;

	for (; next < (uint64_t)o->window; next++, inflight++) {
		if (post(w, qa, src, dst, (int)next, next)) {
			fprintf(stderr, "threads_bench: thread %d: post: %s\n",
				w->id, strerror(errno));
			w->failed = 1;
			goto drain;
		}
	}
	last = bench_now_s();
	while (inflight) {
		int n = ibv_poll_cq(cqa, 16, wc);

		if (n < 0) {
			fprintf(stderr, "threads_bench: thread %d: poll_cq %d\n",
				w->id, n);
			w->failed = 1;
			break;
		}
		if (n == 0) {
			if (bench_now_s() - last > STALL_S) {
				fprintf(stderr, "threads_bench: thread %d: no "
					"completion in %.0f s, %llu in flight\n",
					w->id, STALL_S,
					(unsigned long long)inflight);
				w->failed = 1;
				break;
			}
			continue;
		}
		last = bench_now_s();
		for (int i = 0; i < n; i++) {
			uint64_t seq = wc[i].wr_id;
			int slot = (int)(seq % (uint64_t)o->window);
			size_t off = (size_t)slot * o->size;

			inflight--;
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].opcode != IBV_WC_RDMA_WRITE) {
				/* the first one: the flushes behind it follow */
				if (!w->failed)
					fprintf(stderr, "threads_bench: thread %d: "
						"WRITE %llu: %s (opcode %d)\n",
						w->id, (unsigned long long)seq,
						ibv_wc_status_str(wc[i].status),
						wc[i].opcode);
				w->failed = 1;
				continue;
			}
			if (o->spoil == 1 && w->id == 0 && seq == SPOIL_SEQ)
				((char *)dbuf)[off + o->size / 2] ^= 1;
			if (memcmp((char *)dbuf + off, (char *)sbuf + off,
				   o->size)) {
				const char *d = (char *)dbuf + off;
				const char *s = (char *)sbuf + off;
				size_t k = 0;

				while (d[k] == s[k])
					k++;
				fprintf(stderr, "threads_bench: thread %d: "
					"WRITE %llu: byte %zu of its %u is "
					"wrong\n", w->id,
					(unsigned long long)seq, k, o->size);
				w->failed = 1;
				continue;
			}
			w->writes++;
			if (!atomic_load_explicit(&stop, memory_order_relaxed))
				w->bytes += o->size;
			if (w->failed ||
			    atomic_load_explicit(&stop, memory_order_relaxed))
				continue;
			if (post(w, qa, src, dst, slot, next)) {
				fprintf(stderr, "threads_bench: thread %d: "
					"post: %s\n", w->id, strerror(errno));
				w->failed = 1;
				continue;
			}
			next++;
			inflight++;
		}
	}
drain:
	if (w->failed)
		atomic_store(&stop, 1);
out:
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (src)
		ibv_dereg_mr(src);
	if (dst)
		ibv_dereg_mr(dst);
	if (cqa)
		ibv_destroy_cq(cqa);
	if (cqb)
		ibv_destroy_cq(cqb);
	free(sbuf);
	free(dbuf);
	return NULL;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	struct opts o = { .threads = 1, .window = 16, .size = 4096, .secs = 2 };
	static struct worker w[MAX_THREADS];
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint64_t bytes = 0, writes = 0;
	double el, cpu0;
	int opt, n, failed = 0;

	while ((opt = getopt(argc, argv, "T:s:w:t:d:X:h")) != -1) {
		switch (opt) {
		case 'T': o.threads = atoi(optarg); break;
		case 's': o.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.window = atoi(optarg); break;
		case 't': o.secs = atof(optarg); break;
		case 'd': o.dev = optarg; break;
		case 'X':
			o.spoil = !strcmp(optarg, "byte") ? 1 :
				  !strcmp(optarg, "rkey") ? 2 : -1;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || o.threads < 1 || o.threads > MAX_THREADS ||
	    o.window < 1 || o.window > MAX_WINDOW || o.size < 8 ||
	    o.size % 8 || o.size > (1u << 24) || !(o.secs > 0) ||
	    o.spoil < 0) {
		usage(stderr);
		return 2;
	}

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!o.dev || !strcmp(ibv_get_device_name(list[i]), o.dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "threads_bench: no device %s\n",
			o.dev ? o.dev : "at all");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &pa) ||
	    ibv_query_gid(ctx, 1, 0, &gid)) {
		fprintf(stderr, "threads_bench: PD, port or GID: %s\n",
			strerror(errno));
		return 1;
	}
	pthread_barrier_init(&start_bar, NULL, (unsigned)o.threads + 1);
	for (int i = 0; i < o.threads; i++) {
		w[i] = (struct worker){ .id = i, .o = &o, .ctx = ctx, .pd = pd,
					.gid = gid, .mtu = pa.active_mtu };
		if (pthread_create(&w[i].th, NULL, run, &w[i])) {
			fprintf(stderr, "threads_bench: pthread_create\n");
			return 1;
		}
	}
	pthread_barrier_wait(&start_bar);
	cpu0 = cpu_s();
	t_start = bench_now_s();
	while (!atomic_load(&stop) && bench_now_s() - t_start < o.secs) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, 1);
	el = bench_now_s() - t_start;
	for (int i = 0; i < o.threads; i++) {
		pthread_join(w[i].th, NULL);
		bytes += w[i].bytes;
		writes += w[i].writes;
		failed |= w[i].failed;
	}
	/* CPU of the writing, the drain included (a little beyond el) */
	double cpu = cpu_s() - cpu0;

	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (failed) {
		fprintf(stderr, "threads_bench: T=%d FAILED after %llu checked "
			"WRITEs\n", o.threads, (unsigned long long)writes);
		return 1;
	}
	printf("threads_%d_bw %.4f GB/s\n", o.threads, (double)bytes / el / 1e9);
	printf("threads_%d_writes %llu count\n", o.threads,
	       (unsigned long long)writes);
	printf("threads_%d_cpu_per_gb %.4f s/GB\n", o.threads,
	       bytes ? cpu / ((double)bytes / 1e9) : 0.0);
	fprintf(stderr, "threads_bench: T=%d, %u B WRITEs x %d in flight: "
		"%llu WRITEs, every byte checked, %.3f GB/s in %.2f s, "
		"CPU %.2f s\n", o.threads, o.size, o.window,
		(unsigned long long)writes, (double)bytes / el / 1e9, el, cpu);
	return 0;
}
