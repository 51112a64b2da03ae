/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fault stage's configuration: the UROCE_FAULT spec (its syntax is at
 * the top of fault.c) parsed by fault_spec.c. Only fault.c includes this.
 */
#ifndef UR_LINK_FAULT_SPEC_H
#define UR_LINK_FAULT_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#define FI_DIR_TX 1u
#define FI_DIR_RX 2u

struct fi_cfg {
	uint64_t seed;
	double drop, dup, reorder, corrupt, delay, ce;
	uint32_t delay_us;
	unsigned int dir;
};

/* Parses spec into *c (defaults for what it leaves out; NULL, "", "off"
 * and "0" inject nothing). 0, or -EINVAL with an error log line naming
 * the key or value at fault. */
int ur_fault_spec_parse(const char *spec, struct fi_cfg *c);
/* Whether c injects any fault. */
bool ur_fault_spec_active(const struct fi_cfg *c);

#endif
