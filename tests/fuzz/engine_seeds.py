#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the hand-made seeds of the engine fuzzer (tests/fuzz/fuzz_engine.c)
into a corpus directory: plain traffic of every kind, loss, reordering, RNR,
MW binds, QP changes, and multi-chunk READs at path MTU 256. The encoding
follows run_op() and the op_*() functions there: a 2-byte header (path MTU,
retry counts, timeout), six 4-byte PSNs, then operations.
Usage: tests/fuzz/engine_seeds.py tests/fuzz/corpus/engine"""
import os
import struct
import sys

out = sys.argv[1]
def hdr(h1=0x1d | (1<<2) | (7<<5), h2=14 | (1<<3) ):
    # default: path MTU 1024, retry_cnt 7, rnr_retry 7, timeout 22,
    # min_rnr_timer 2; then the six QPs' initial PSNs
    b = bytes([h1 & 0xff, h2 & 0xff])
    for i in range(6): b += struct.pack('<I', 0x100000 * (i+1) + 7)
    return b
def send(qi, op, flags, ln, loff=0, roff=0, lmr=0, rsel=0, rmr=0, arg=0):
    return bytes([0, qi, op, flags]) + struct.pack('<HHH', ln, loff, roff) + bytes([lmr, rsel, rmr, arg])
def recv(qi, mr, n, off, ln):
    return bytes([2, qi, mr, n]) + struct.pack('<HH', off, ln)
def inject(qi, opsel, flags, dpsn, rsel, asel, syn, off, rlen, plen, arg=0):
    return bytes([3, qi, opsel, flags, dpsn & 0xff, rsel, asel, syn]) + struct.pack('<HHH', off, rlen, plen) + bytes([arg])
def deliver(n): return bytes([4, n])
def net(act, arg): return bytes([5, act, arg])
def tick(t): return bytes([6, t])
def poll(qi): return bytes([7, qi])
def modify(qi, sel, psn): return bytes([8, qi, sel]) + struct.pack('<I', psn)
def bind1(qi, mr, acc, flags, off, ln): return bytes([9, qi, mr, acc, flags]) + struct.pack('<HH', off, ln)
ALL = bytes([10])   # deliver everything queued
S = 1               # IBV_SEND_SIGNALED
seeds = {
 'rc_send': hdr() + recv(1,0,0,0,4000) + send(0,0,S,100) + ALL + poll(0) + poll(1) + recv(1,0,1,100,3000) + send(0,1,S|0x20,3000,5) + ALL + poll(0)+poll(1),
 'rc_write_read_atomic': hdr() + send(0,2,S,3000,0,0,0,0,0) + ALL + send(0,4,S,5000,0,200,1,0,0) + ALL + send(0,5,S,8,16,64,0,0,0,9) + ALL + send(0,6,S,8,24,72,0,0,0,3) + ALL + poll(0) + poll(1),
 'rc_write_imm_recv': hdr() + recv(1,0,0,0,10) + send(0,3,S,2000,0,500,0,0,0) + ALL + poll(0)+poll(1),
 'rc_loss_retransmit': hdr() + recv(1,0,0,0,8000) + send(0,0,S,6000) + net(0,0) + ALL + tick(20) + ALL + tick(25) + ALL + poll(0) + poll(1),
 'rc_read_reorder': hdr() + send(0,4,S,5000,0,100,1,0,0) + deliver(1) + net(2,1) + net(1,0) + ALL + tick(22) + ALL + poll(0),
 'uc_send_write': hdr() + recv(3,0,0,0,4000) + send(2,0,S,1500) + ALL + send(2,2,S,1200,0,64,0,0,0) + ALL + poll(2) + poll(3),
 'ud_send': hdr() + recv(5,0,0,0,4000) + send(4,0,S,500) + ALL + poll(4) + poll(5),
 'mw2_bind_write': hdr() + send(0,8,S,4096,0,0,0,7,0) + ALL + poll(0) + send(1,2,S,100,0,10,0,6,0) + ALL + poll(1) + poll(0),
 'mw1_bind_read': hdr() + bind1(0,0,2,S,0,4096) + ALL + poll(0) + send(1,4,S,100,0,10,0,4,0) + ALL + poll(1),
 'rnr': hdr() + send(0,0,S,100) + ALL + tick(10) + ALL + recv(1,0,0,0,200) + tick(15) + ALL + poll(0) + poll(1),
 'inject_rc': hdr() + recv(0,0,0,0,4000) + inject(0,4,2,0,0,0,0,0,0,64) + inject(0,10,2,1,0,0,0,10,100,100) + inject(0,12,2,2,0,0,0,0,300,0) + inject(0,19,2,3,0,0,0,8,8,0,5) + ALL + poll(0),
 'inject_ack': hdr() + send(0,0,S,3000) + inject(0,17,0,0,0,0,0,0,0,0) + inject(0,17,0,2,0,0,0x60,0,0,0) + ALL + tick(30) + ALL + poll(0),
 'modify_err_flush': hdr() + recv(1,0,0,0,100) + send(0,0,S,50) + modify(1,0,0) + ALL + poll(0) + poll(1) + modify(1,5,0x123) + modify(0,5,0x99) + recv(1,0,0,0,100) + send(0,0,S,50) + ALL + poll(0) + poll(1),
 'sqd_resume': hdr() + send(0,2,S,100) + modify(0,1,0) + ALL + modify(0,2,0) + send(0,2,S,100) + ALL + poll(0),
 'mtu256_multi': hdr(h1=0|(7<<2)|(7<<5)) + recv(1,0,3,0,9000) + send(0,0,S|0x60,9000,0,0,0x80) + ALL + poll(0) + poll(1),
}
os.makedirs(out, exist_ok=True)
for k,v in seeds.items():
    open(os.path.join(out, k), 'wb').write(v)
# multi-chunk READs at path MTU 256 under loss and reordering
h256 = hdr(h1=0 | (7<<2) | (7<<5), h2=14 | (1<<3))
more = {
 'rc_read_2chunks_clean': h256 + send(0,0x86,S,20000,30000,0,0,0,0) + ALL + ALL + ALL + poll(0),
 'rc_read_2chunks_drop': h256 + send(0,0x86,S,20000,30000,0,0,0,0) + deliver(1) + deliver(1) + net(0,0) + deliver(10) + net(2,5) + ALL + tick(22) + ALL + tick(23) + ALL + tick(24) + ALL + poll(0),
 'rc_read_2chunks_reorder': h256 + send(0,0x86,S,20000,30000,0,0,0,0) + deliver(1) + net(2,3) + net(2,7) + net(2,40) + net(2,70) + ALL + tick(22) + ALL + tick(23) + ALL + poll(0),
}
for k,v in more.items():
    open(os.path.join(out, k), 'wb').write(v)
# the READ defect's shape: a READ of two chunks, SENDs after it, a response
# and a later request lost, the next request draws a sequence NAK
more2 = {
 'rc_read_then_sends_loss': h256 + recv(1,1,0,0,100) + recv(1,1,0,200,100) + recv(1,1,0,400,100)
   + send(0,0x86,S,20000,30000,0,0,0,0) + send(0,0,S,50,1000,0,1) + send(0,0,S,50,1100,0,1) + send(0,0,S,50,1200,0,1)
   + deliver(1) + net(0x80,5) + ALL + deliver(1) + net(0x80,1) + ALL + ALL + tick(20) + ALL + tick(21) + ALL + tick(22) + ALL + poll(0) + poll(1),
}
for k,v in more2.items():
    open(os.path.join(out, k), 'wb').write(v)
more3 = {
 'rc_read_nak_skips': h256 + recv(1,1,0,0,100) + recv(1,1,0,200,100) + recv(1,1,0,400,100)
   + send(0,0x86,S,20000,30000,0,0,0,0) + send(0,0,S,50,1000,0,1) + send(0,0,S,50,1100,0,1) + send(0,0,S,50,1200,0,1)
   + deliver(1) + deliver(1) + net(0,0) + deliver(1) + net(0x80,18) + ALL + tick(20) + ALL + tick(21) + ALL + tick(22) + ALL + poll(0) + poll(1),
}
for k,v in more3.items():
    open(os.path.join(out, k), 'wb').write(v)
more4 = {
 'regress_read_nak_in_multichunk_read': h256 + send(0,0x86,S,20000,30000,0,0,0,0)
   + deliver(1) + deliver(1) + net(0x80,17) + inject(0,17,0,70,0,0,0x60,0,0,0) + ALL + tick(20) + ALL + tick(21) + ALL + tick(22) + ALL + poll(0),
}
for k,v in more4.items():
    open(os.path.join(out, k), 'wb').write(v)

# RC WRITEs of several packets under loss, reordering and duplication: the
# fuzzer compares the remote bytes at their successful completion
more5 = {
 'rc_write_multi_loss': h256 + send(0,0x84,S,20000,0,30000,0,0,0)
   + deliver(3) + net(0x80,4) + net(2,9) + net(1,0) + ALL + tick(25) + ALL + tick(26) + ALL + poll(0),
 'rc_write_then_read': h256 + send(0,0x84,S,9000,0,30000,0,0,0) + ALL + tick(25) + ALL + poll(0)
   + send(0,0x86,S,9000,45000,30000,0,0,0) + deliver(2) + net(0x80,3) + ALL + tick(26) + ALL + poll(0),
}
for k, v in more5.items():
    open(os.path.join(out, k), 'wb').write(v)

# a type 2 MW bound, used, invalidated (LOCAL_INV, then SEND_WITH_INV):
# a WRITE through its old key must then fail
more6 = {
 'mw2_local_inv': hdr() + send(0,8,S,4096,0,0,0,7,0) + ALL + poll(0)
   + send(1,2,S,100,0,10,0,6,0) + ALL + poll(1)
   + send(0,7,S,0,0,0,0,6,0) + ALL + poll(0)
   + send(1,2,S,100,0,10,0,6,0) + ALL + tick(25) + ALL + poll(1) + poll(0),
 'mw2_send_inv': hdr() + recv(0,1,0,0,200) + send(0,8,S,4096,0,0,0,7,0) + ALL + poll(0)
   + send(1,9,S,100,0,0,1,6,0) + ALL + poll(1) + poll(0)
   + send(1,2,S,100,0,10,0,6,0) + ALL + tick(25) + ALL + poll(1) + poll(0),
}
for k, v in more6.items():
    open(os.path.join(out, k), 'wb').write(v)

# IBA 1.5: ATOMIC_WRITEs posted (opsel 0x78), one misaligned, one lost;
# FLUSH and ATOMIC_WRITE requests injected (op_inject's opsel 23 and 24;
# asel's top bits the selectivity, syn's low bits the placement type)
more7 = {
 'atomic_write_post': hdr() + send(0,0x78,S,8,0,64,0,0,0) + ALL + poll(0)
   + send(0,0x78,S|0x10,8,0,67,0,0,0) + ALL + tick(25) + ALL + poll(0) + poll(1),
 'atomic_write_loss': hdr() + send(0,0x78,S,8,0,64,0,0,0) + send(0,2,S,100,0,128,0,0,0)
   + net(0,0) + ALL + tick(22) + ALL + tick(23) + ALL + poll(0),
 'inject_flush_atomic_write': hdr() + inject(1,23,2,0,0,0,1,64,8,0)
   + inject(1,23,2,1,0,0x40,1,0,0,0) + inject(1,24,2,2,0,0,0,64,8,8)
   + inject(1,24,2,2,0,0,0,64,8,8) + ALL + poll(1),
}
for k, v in more7.items():
    open(os.path.join(out, k), 'wb').write(v)
