/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classic pcap files (microsecond timestamps). The writer records RoCEv2
 * datagrams (UROCE_PCAP=file): given a flow and the UDP payload as iovecs it
 * synthesises Ethernet (fixed fake MACs, optional) + IP (ID from the flow,
 * normally 0, DF) + UDP; it is thread-safe and flushes on close. The reader
 * walks a file frame by frame (tests, fuzz seeds).
 */
#ifndef UR_WIRE_PCAP_H
#define UR_WIRE_PCAP_H

#include "wire/encap.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ur_pcap;

/* linktype: UR_LINKTYPE_ETHERNET or UR_LINKTYPE_RAW. 0 or -errno. */
int ur_pcap_open(struct ur_pcap **out, const char *path, int linktype);
/* One datagram; the UDP payload is the concatenation of iov[]. Frames are
 * truncated to 65535 bytes of capture. 0 or -errno. */
int ur_pcap_write(struct ur_pcap *p, const struct ur_ip_flow *flow,
		  const struct iovec *iov, int iovcnt);
/* Flushes and closes; 0 or -errno (of the flush). NULL is a no-op. */
int ur_pcap_close(struct ur_pcap *p);

/* Reader: calls cb(frame, caplen, linktype, arg) for each record until cb
 * returns non-zero (that value is returned). 0 at end of file, -errno on
 * I/O error, -EBADMSG on a malformed file. Reads the whole file into
 * memory (test captures are small). */
typedef int (*ur_pcap_cb)(const uint8_t *frame, size_t caplen, int linktype,
			  void *arg);
int ur_pcap_foreach(const char *path, ur_pcap_cb cb, void *arg);

#endif
