/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wire/: the RoCEv2 codec, pure code with no I/O except the pcap writer.
 * Include this for everything: headers and accessors (hdr.h), the opcode
 * table (opcode.h), parse/build and drop reasons (pkt.h), PSN math (psn.h),
 * IP/UDP encapsulation (encap.h), ICRC (icrc.h), pcap files (pcap.h).
 */
#ifndef UR_WIRE_WIRE_H
#define UR_WIRE_WIRE_H

#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/pkt.h"
#include "wire/psn.h"
#include "wire/encap.h"
#include "wire/icrc.h"
#include "wire/pcap.h"

#endif
