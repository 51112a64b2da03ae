/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The non-default symbol versions of libibverbs.so.1: the IBVERBS_1.0 verbs
 * that binaries linked against libibverbs before 1.1 (2007) bind to, and
 * ibv_register_driver@IBVERBS_1.1 (the pre-2017 provider entry point).
 *
 * The 1.0 ABI used a different struct ibv_device/ibv_context; we do not
 * emulate it. Every 1.0 entry fails cleanly: the device list is empty
 * (NULL, errno EOPNOTSUPP), so no 1.0 object can ever reach the others,
 * which nevertheless fail the same way rather than crash. Old providers
 * calling ibv_register_driver are ignored: we use no providers.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

#define UR_SYMVER(name, ver) __attribute__((symver(#name "@" ver)))

/* Pointer verbs: NULL + errno. */
#define COMPAT_PTR(name)                                                      \
	UR_EXPORT UR_SYMVER(name, "IBVERBS_1.0") void *ur_compat_##name(void); \
	void *ur_compat_##name(void)                                           \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return NULL;                                                   \
	}

/* Verbs returning an errno value. */
#define COMPAT_ERRNO(name)                                                    \
	UR_EXPORT UR_SYMVER(name, "IBVERBS_1.0") int ur_compat_##name(void);  \
	int ur_compat_##name(void)                                             \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return EOPNOTSUPP;                                             \
	}

/* Verbs returning -1 with errno. */
#define COMPAT_MINUS1(name)                                                   \
	UR_EXPORT UR_SYMVER(name, "IBVERBS_1.0") int ur_compat_##name(void);  \
	int ur_compat_##name(void)                                             \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return -1;                                                     \
	}

#define COMPAT_VOID(name)                                                     \
	UR_EXPORT UR_SYMVER(name, "IBVERBS_1.0") void ur_compat_##name(void); \
	void ur_compat_##name(void)                                            \
	{                                                                      \
	}

COMPAT_PTR(ibv_get_device_list)
COMPAT_VOID(ibv_free_device_list)
COMPAT_PTR(ibv_get_device_name)
COMPAT_PTR(ibv_open_device)
COMPAT_ERRNO(ibv_close_device)
COMPAT_MINUS1(ibv_get_async_event)
COMPAT_VOID(ibv_ack_async_event)
COMPAT_ERRNO(ibv_query_device)
COMPAT_ERRNO(ibv_query_port)
COMPAT_MINUS1(ibv_query_gid)
COMPAT_MINUS1(ibv_query_pkey)
COMPAT_PTR(ibv_alloc_pd)
COMPAT_ERRNO(ibv_dealloc_pd)
COMPAT_PTR(ibv_reg_mr)
COMPAT_ERRNO(ibv_dereg_mr)
COMPAT_PTR(ibv_create_cq)
COMPAT_ERRNO(ibv_resize_cq)
COMPAT_ERRNO(ibv_destroy_cq)
COMPAT_MINUS1(ibv_get_cq_event)
COMPAT_VOID(ibv_ack_cq_events)
COMPAT_PTR(ibv_create_srq)
COMPAT_ERRNO(ibv_modify_srq)
COMPAT_ERRNO(ibv_query_srq)
COMPAT_ERRNO(ibv_destroy_srq)
COMPAT_PTR(ibv_create_qp)
COMPAT_ERRNO(ibv_query_qp)
COMPAT_ERRNO(ibv_modify_qp)
COMPAT_ERRNO(ibv_destroy_qp)
COMPAT_PTR(ibv_create_ah)
COMPAT_ERRNO(ibv_destroy_ah)
COMPAT_ERRNO(ibv_attach_mcast)
COMPAT_ERRNO(ibv_detach_mcast)

/* __be64 ibv_get_device_guid(struct ibv_device *): no device, GUID 0. */
UR_EXPORT UR_SYMVER(ibv_get_device_guid, "IBVERBS_1.0")
uint64_t ur_compat_ibv_get_device_guid(void);
uint64_t ur_compat_ibv_get_device_guid(void)
{
	errno = EOPNOTSUPP;
	return 0;
}

/* void ibv_register_driver(const char *name, ibv_driver_init_func init) */
UR_EXPORT UR_SYMVER(ibv_register_driver, "IBVERBS_1.1")
void ur_compat_ibv_register_driver(const char *name, void *init_func);
void ur_compat_ibv_register_driver(const char *name, void *init_func)
{
}
