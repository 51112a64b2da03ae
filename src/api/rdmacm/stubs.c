/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Exported so that every binary linked against rdma-core 44's librdmacm
 * loads, but not implemented yet (README, "What works"): rsockets,
 * multicast, ECE. Each fails with -1 and errno ENOSYS (EOPNOTSUPP where
 * rdma-core itself would say the device cannot).
 */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rdmacm_priv.h"

UR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				   struct sockaddr *addr)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}

UR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}

/* rsockets (rdma/rsocket.h) */
UR_EXPORT int rsocket(int domain, int type, int protocol)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rlisten(int socket, int backlog)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rshutdown(int socket, int how)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rclose(int socket)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return cma_err(ENOSYS);
}

UR_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		      fd_set *exceptfds, struct timeval *timeout)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rsetsockopt(int socket, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			  socklen_t *optlen)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rfcntl(int socket, int cmd, ...)
{
	return cma_err(ENOSYS);
}

UR_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
		       off_t offset)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	return cma_err(ENOSYS);
}

UR_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			  off_t offset, int flags)
{
	errno = ENOSYS;
	return 0;
}
