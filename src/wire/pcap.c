/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classic pcap writer and reader (the format of tcpdump 2.4 files: 24-byte
 * file header, 16-byte record headers, host byte order with magic
 * 0xa1b2c3d4). The writer serialises whole records under a mutex so that
 * concurrent threads never interleave; stdio buffers, close() flushes.
 */
#include "wire/pcap.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCAP_MAGIC 0xa1b2c3d4u
#define PCAP_MAGIC_SWAPPED 0xd4c3b2a1u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_MAGIC_NS_SWAPPED 0x4d3cb2a1u
#define PCAP_SNAPLEN 65535u
#define PCAP_FILE_HDR 24
#define PCAP_REC_HDR 16

struct ur_pcap {
	pthread_mutex_t lock;
	FILE *f;
	int linktype;
	int err; /* first write error, -errno */
};

/* Locally administered fake MACs: 02:75:72:6f:63:XX ("uroc") */
static const uint8_t fake_src_mac[6] = {0x02, 0x75, 0x72, 0x6f, 0x63, 0x01};
static const uint8_t fake_dst_mac[6] = {0x02, 0x75, 0x72, 0x6f, 0x63, 0x02};

int ur_pcap_open(struct ur_pcap **out, const char *path, int linktype)
{
	uint32_t hdr[6] = {PCAP_MAGIC, 2 | 4u << 16, 0, 0, PCAP_SNAPLEN, 0};
	struct ur_pcap *p;
	int ret;

	if (linktype != UR_LINKTYPE_ETHERNET && linktype != UR_LINKTYPE_RAW)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->f = fopen(path, "wbe");
	if (!p->f) {
		ret = -errno;
		goto err_free;
	}
	p->linktype = linktype;
	hdr[5] = (uint32_t)linktype;
	/* flushed at once and after every record: a process killed with
	 * SIGKILL leaves a capture that ends with a whole record */
	if (fwrite(hdr, sizeof(hdr), 1, p->f) != 1 || fflush(p->f)) {
		ret = -EIO;
		goto err_close;
	}
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;

err_close:
	fclose(p->f);
err_free:
	free(p);
	return ret;
}

int ur_pcap_write(struct ur_pcap *p, const struct ur_ip_flow *flow,
		  const struct iovec *iov, int iovcnt)
{
	uint8_t hdr[UR_ETH_HDR_BYTES + UR_IPV6_HDR_BYTES + UR_UDP_HDR_BYTES];
	uint32_t rec[4];
	struct timespec ts;
	size_t paylen = 0, hlen = 0, caplen, left;
	int i, n, ret = 0;
	uint16_t sum;

	for (i = 0; i < iovcnt; i++)
		paylen += iov[i].iov_len;
	if (p->linktype == UR_LINKTYPE_ETHERNET) {
		memcpy(hdr, fake_dst_mac, 6);
		memcpy(hdr + 6, fake_src_mac, 6);
		hdr[12] = flow->family == AF_INET6 ? 0x86 : 0x08;
		hdr[13] = flow->family == AF_INET6 ? 0xdd : 0x00;
		hlen = UR_ETH_HDR_BYTES;
	}
	n = ur_ip_udp_hdr_build(hdr + hlen, flow, paylen);
	if (n < 0)
		return n;
	hlen += (size_t)n;
	/* what a kernel UDP socket puts on the wire (the ICRC masks it) */
	sum = ur_udp_csum_iov(flow, hdr + hlen - UR_UDP_HDR_BYTES, iov, iovcnt);
	hdr[hlen - 2] = sum >> 8;
	hdr[hlen - 1] = sum & 0xff;
	caplen = UR_MIN(hlen + paylen, (size_t)PCAP_SNAPLEN);
	clock_gettime(CLOCK_REALTIME, &ts);
	rec[0] = (uint32_t)ts.tv_sec;
	rec[1] = (uint32_t)(ts.tv_nsec / 1000);
	rec[2] = (uint32_t)caplen;
	rec[3] = (uint32_t)(hlen + paylen);

	pthread_mutex_lock(&p->lock);
	if (fwrite(rec, sizeof(rec), 1, p->f) != 1 ||
	    fwrite(hdr, hlen, 1, p->f) != 1) {
		ret = -EIO;
		goto out;
	}
	left = caplen - hlen;
	for (i = 0; i < iovcnt && left; i++) {
		size_t k = UR_MIN(iov[i].iov_len, left);

		if (k && fwrite(iov[i].iov_base, k, 1, p->f) != 1) {
			ret = -EIO;
			goto out;
		}
		left -= k;
	}
	if (fflush(p->f))
		ret = -EIO;
out:
	if (ret && !p->err)
		p->err = ret;
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int ur_pcap_close(struct ur_pcap *p)
{
	int ret;

	if (!p)
		return 0;
	ret = p->err;
	if (fflush(p->f) && !ret)
		ret = -errno;
	if (fclose(p->f) && !ret)
		ret = -errno;
	pthread_mutex_destroy(&p->lock);
	free(p);
	return ret;
}

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static int read_all(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL, *nb;
	size_t cap = 0, n = 0, got;
	int ret = 0;

	if (!f)
		return -errno;
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	if (!ret && ferror(f))
		ret = -EIO;
	fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	*data = buf;
	*len = n;
	return 0;
}

int ur_pcap_foreach(const char *path, ur_pcap_cb cb, void *arg)
{
	uint8_t *d = NULL;
	size_t len = 0, off;
	uint32_t magic;
	bool swap;
	int linktype, ret;

	ret = read_all(path, &d, &len);
	if (ret)
		return ret;
	ret = -EBADMSG;
	if (len < PCAP_FILE_HDR)
		goto out;
	memcpy(&magic, d, 4);
	if (magic == PCAP_MAGIC || magic == PCAP_MAGIC_NS)
		swap = false;
	else if (magic == PCAP_MAGIC_SWAPPED || magic == PCAP_MAGIC_NS_SWAPPED)
		swap = true;
	else
		goto out;
	linktype = (int)(rd32(d + 20, swap) & 0xffff);
	off = PCAP_FILE_HDR;
	ret = 0;
	while (off < len) {
		uint32_t incl;

		if (len - off < PCAP_REC_HDR) {
			ret = -EBADMSG;
			break;
		}
		incl = rd32(d + off + 8, swap);
		off += PCAP_REC_HDR;
		if (incl > len - off) {
			ret = -EBADMSG;
			break;
		}
		ret = cb(d + off, incl, linktype, arg);
		if (ret)
			break;
		off += incl;
	}
out:
	free(d);
	return ret;
}
