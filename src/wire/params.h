/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire codec's tunables, each with why it has its value. None changes
 * what goes on the wire.
 */
#ifndef UR_WIRE_PARAMS_H
#define UR_WIRE_PARAMS_H

/*
 * IPv4-ID solvers cached per thread, direct-mapped by UDP length: the ICRC
 * of a received IPv4 packet is checked through a solver built for its
 * length (wire/icrc.c), and a sent GSO train's segments get their ICRC
 * adjusted through the same; one flow's ACKs and data packets alternate
 * between a few lengths. A peer alternating more lengths than this costs
 * a rebuild (about 1.5 us) per packet.
 */
#define UR_ICRC_SOLVER_CACHE 16

#endif
