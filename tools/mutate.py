#!/usr/bin/env python3
"""Mutation check: does the fast test suite notice plausible single-line
bugs in the scheduler, the classifier, the ACK filter, the rate pool and
the configuration parser?

Each mutant replaces one exact snippet of one file (it must occur exactly
once, else the script stops: re-target the snippet after the code moved).
The tree is copied to a scratch directory (git-tracked and untracked,
non-ignored files) and its unit + sim test programs are built there; for
each mutant the file is changed and rebuilt, and the test programs whose
binary changed run one at a time (a program the mutant did not change
cannot see it); the original is restored after every mutant. A mutant is
"killed" when a test fails or times out, "survived" when all pass,
"unchanged" when no test program changed (the compiler made the same code:
an equivalent mutant) and "invalid" when it does not build (a stale or
broken mutant). Mutants marked equivalent (their note says why) are
listed but not run. The working tree is never touched.

    tools/mutate.py                      # the full set (about 30 min on 2 cores)
    tools/mutate.py --min-rate 0.95      # ... fail if a file has < 95 % killed
    tools/mutate.py --file src/sched/ack_filter.c
    tools/mutate.py --only blue_inc_x4,no_decaying_list --keep
    tools/mutate.py --sample 8           # a seeded draw, as `meson test` runs it
    tools/mutate.py --sample 8 --seed 20260101   # replay one draw
    tools/mutate.py --list

`meson test` runs `--sample 8` as the test mutation_sample (suite
mutation, alone; README.md, "Mutation check"), its scratch tree kept in
the build dir. The sample draws from as many files as it can; its seed is
the UTC date unless --seed or SHAPER_MUTATION_SEED fixes it, and it is
printed with the names drawn. A sample has no baseline run: it confirms
each kill instead (the test that failed must pass on the unmutated tree),
and fails on any survivor, unchanged or invalid mutant, or stale snippet.
A kept workdir remembers each test's time and each mutant's killer, which
only decides the order the tests run in.
"""

import argparse
import datetime
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# kind: "review" = the kinds a reviewer plants (a wrong constant, an
# inverted or dropped condition, an off-by-one, a wrong field, a missed
# mask, a loosened range); "own" = further mutants aimed at what particular
# tests check. equivalent="why" marks a mutant that cannot change behaviour
# (not run, not counted). Snippets are kept short and distinctive so that
# a merge which moves code around only needs the snippet re-targeted.
# killer="suite/test" names the test expected to kill it, run first when no
# earlier run in the workdir says otherwise (a sample has no such run, and
# the file's other tests may take minutes).
MUTANTS = [
    # ---- a reviewer's mutants of the CAKE core
    dict(name="no_decaying_list", kind="review", file="src/sched/cake.c",
         orig="if (cobalt_busy(&f->cvars, now)) {",
         repl="if (0 && cobalt_busy(&f->cvars, now)) {",
         note="an emptied flow is retired at once instead of decaying"),
    dict(name="sp_flows_without_decaying", kind="review", file="src/sched/cake.c",
         orig="t->sparse_flows = b->sparse_flow_count + b->decaying_flow_count;",
         repl="t->sparse_flows = b->sparse_flow_count;",
         note="sp_flows stops counting decaying flows"),
    dict(name="no_sparse_wait_to_bulk", kind="review", file="src/sched/cake.c",
         orig="} else if (f->set == CAKE_SET_SPARSE_WAIT) {",
         repl="} else if (0 && f->set == CAKE_SET_SPARSE_WAIT) {",
         note="a packet for a SPARSE_WAIT flow does not make it BULK"),
    dict(name="no_new_flow_credit", kind="review", file="src/sched/cake.c",
         orig="f->deficit = cake_flow_quantum(c, b, f);",
         repl="f->deficit = 0;",
         note="a new (or re-activated) flow gets no initial quantum"),
    dict(name="blue_never_relaxes", kind="review", file="src/sched/cake.c",
         orig="b->cparams.p_dec = 1u << 20;",
         repl="b->cparams.p_dec = 0;",
         note="BLUE's decrement is zero (p_drop never relaxes)"),
    dict(name="blue_inc_x4", kind="review", file="src/sched/cake.c",
         orig="b->cparams.p_inc = 1u << 24;",
         repl="b->cparams.p_inc = 1u << 26;",
         note="BLUE's increment 4/256 instead of 1/256"),
    dict(name="un_flows_never_decremented", kind="review", file="src/sched/cake.c",
         orig="\t\tb->unresponsive_flow_count--;",
         repl="\t\t(void)0;",
         note="un_flows keeps counting flows whose p_drop relaxed to 0"),
    dict(name="cobalt_count_no_decay_on_empty", kind="review", file="src/sched/cobalt.h",
         orig="if (v->count != 0 && now >= v->drop_next) {",
         repl="if (0 && v->count != 0 && now >= v->drop_next) {",
         note="COBALT count does not decay when the queue is found empty"),
    dict(name="no_4mtu_target_floor", kind="review", file="src/sched/cobalt.h",
         orig="sojourn > 4 * p->mtu_time;",
         repl="sojourn > 0;",
         note="over_target no longer needs sojourn > 4 MTU-times"),
    dict(name="ingress_no_cobalt_charge", kind="review", file="src/sched/cake.c",
         orig="len = cake_advance_shaper(c, b, pkt, now, true);",
         repl="len = pkt->adj_len;",
         note="ingress: COBALT drops do not advance the shaper clocks"),
    dict(name="no_bulk_flow_term", kind="review", file="src/sched/cake.c",
         orig="c->p.ingress ? b->bulk_flow_count : 0,",
         repl="0,",
         note="ingress: the 2 x mtu_time x bulk_flows term is dropped"),
    dict(name="way_inds_counts_home", kind="review", file="src/sched/cake.c",
         orig="if ((uint32_t)w != inner)",
         repl="if (1)",
         note="way_inds also counts hits in the home way"),
    dict(name="overflow_drops_newest", kind="review", file="src/sched/cake.c",
         orig="pkt = cake_flow_pop(c, b, f);\n\tif (pkt == NULL) {\n\t\tc->overflow_timeout = 0;",
         repl=("pkt = f->pkts.tail; { struct sh_pkt *q = NULL, *r = f->pkts.head; "
               "while (r != NULL && r != pkt) { q = r; r = r->next; } if (pkt != NULL) { "
               "sh_pkt_list_unlink(&f->pkts, q, pkt); f->backlog -= pkt->len; "
               "b->backlog -= pkt->len; b->qlen--; c->backlog -= pkt->len; c->qlen--; "
               "c->buffer_used -= pkt->mem; } }"
               "\n\tif (pkt == NULL) {\n\t\tc->overflow_timeout = 0;"),
         note="overflow drops the fattest queue's newest packet, not its head"),
    dict(name="no_quantum_dither", kind="review", file="src/sched/cake.c",
         orig="(sh_rand64(&c->rng) >> 48)) >>",
         repl="0) >>",
         note="host-scaled quantum without the random 16-bit addend"),
    dict(name="pk_delay_gain", kind="review", file="src/sched/cake.c",
         orig="delay > b->peak_delay ? 2 : 8",
         repl="delay > b->peak_delay ? 4 : 8",
         note="pk_delay rises with gain 1/16 instead of 1/4"),
    dict(name="last_packet_dropped", kind="review", file="src/sched/cake.c",
         orig="\t\t    f->pkts.head == NULL)",
         repl="\t\t    0)",
         note="COBALT may drop the last packet of a flow"),
    dict(name="no_host_quantum_division", kind="review", file="src/sched/cake.c",
         orig="c->quantum_div[load]",
         repl="c->quantum_div[1]",
         note="the flow quantum is not divided by the host's bulk flows"),
    dict(name="failsafe_factor", kind="review", file="src/sched/cake.c",
         orig="glob_dur + (glob_dur >> 1)",
         repl="glob_dur + (glob_dur >> 3)",
         note="failsafe clock at 8/9 of the rate instead of 2/3"),
    dict(name="shaped_tie_rule", kind="review", file="src/sched/cake.c",
         orig="if (d <= 0 || d <= best) {",
         repl="if (d < best) {",
         note="shaped tin choice: soonest clock wins even when several are due"),
    dict(name="interval_formula", kind="review", file="src/sched/cake.c",
         orig="interval = target + c->interval_over_target_ns;",
         repl="interval = c->interval_over_target_ns + c->target_ns; /* rtt */",
         note="interval not raised by the target's increase on slow links"),
    # ---- our own, of the CAKE core
    dict(name="tie_lower_index", kind="own", file="src/sched/cake.c",
         orig="if (d <= 0 || d <= best) {",
         repl="if (d <= 0 || d < best) {",
         note="equal clocks in the future: lower tin index wins"),
    dict(name="target_1mtu", kind="own", file="src/sched/cake.c",
         orig="target = mtu_time * 3 / 2;",
         repl="target = mtu_time;",
         note="target floor 1 MTU-time instead of 1.5"),
    dict(name="flow_quantum_shift", kind="own", file="src/sched/cake.c",
         orig="uint64_t q = rate >> 12;",
         repl="uint64_t q = rate >> 11;",
         note="flow quantum rate/2048 instead of rate/4096"),
    dict(name="tin_drr_ignores_deficit", kind="own", file="src/sched/cake.c",
         orig="if (busy && b->tin_deficit >= 0)",
         repl="if (busy)",
         note="unshaped tin DRR ignores the tin deficit"),
    dict(name="no_decaying_first", kind="own", file="src/sched/cake.c",
         orig="if (first && b->lists[CAKE_LIST_DECAYING].head != CAKE_NIL)",
         repl="if (0 && first)",
         note="the decaying list is not looked at first"),
    dict(name="avg_delay_gain", kind="own", file="src/sched/cake.c",
         orig="b->avg_delay = cake_ewma(b->avg_delay, delay, 8);",
         repl="b->avg_delay = cake_ewma(b->avg_delay, delay, 4);",
         note="av_delay gain 1/16 instead of 1/256"),
    dict(name="base_delay_gain", kind="own", file="src/sched/cake.c",
         orig="delay < b->base_delay ? 2 : 8",
         repl="delay < b->base_delay ? 8 : 8",
         note="sp_delay does not fall fast"),
    dict(name="no_host_bulk_dec_on_empty", kind="own", file="src/sched/cake.c",
         orig="\t\t\tb->bulk_flow_count--;\n\t\t\tcake_host_bulk_dec(c, b, f);\n\t\t\tb->decaying_flow_count++;",
         repl="\t\t\tb->bulk_flow_count--;\n\t\t\t(void)0;\n\t\t\tb->decaying_flow_count++;",
         note="a bulk flow that starts decaying stays charged to its hosts"),
    dict(name="tin_clock_no_catch_up", kind="own", file="src/sched/cake.c",
         orig="\t\tb->time_next_packet += tin_dur;",
         repl="\t\tb->time_next_packet = now + tin_dur;",
         note="a tin clock in the past jumps to now instead of catching up"),
    dict(name="ack_drop_uncounted", kind="own", file="src/sched/cake.c",
         orig="\tb->ack_drops++;",
         repl="\t(void)0;",
         note="ACK-filter removals are not counted in ack_drop"),
    dict(name="way_miss_uncounted", kind="own", file="src/sched/cake.c",
         orig="\t\tb->way_misses++;",
         repl="\t\t(void)0;",
         note="way_miss never counts"),
    dict(name="blue_marks_instead", kind="own", file="src/sched/cobalt.h",
         orig="rnd(rnd_ctx) < v->p_drop)\n\t\tdrop = true;",
         repl="rnd(rnd_ctx) < v->p_drop)\n\t\tdrop = !(mark != NULL && mark(pkt));",
         note="BLUE marks ECN-capable packets instead of dropping them"),
    # ---- ours, aimed at what test_cake_edges and test_cake_model check
    dict(name="full_host_set_way0", kind="own", file="src/sched/cake.c",
         orig="k = w >= 0 ? outer + (uint32_t)w : idx;",
         repl="k = w >= 0 ? outer + (uint32_t)w : outer;",
         note="a full host set shares its first way instead of the home slot"),
    dict(name="overlimits_enqueue_uncounted", kind="own", file="src/sched/cake.c",
         orig="c->failsafe_next_packet > now) {\n\t\t\t\tc->overlimits++;",
         repl="c->failsafe_next_packet > now) {\n\t\t\t\t(void)0;",
         note="an arrival at an empty qdisc with clocks ahead is not an overlimit"),
    dict(name="overlimits_dequeue_uncounted", kind="own", file="src/sched/cake.c",
         orig="c->failsafe_next_packet > now) {\n\t\tc->overlimits++;",
         repl="c->failsafe_next_packet > now) {\n\t\t(void)0;",
         note="a dequeue the shaper turns away is not an overlimit"),
    dict(name="geometric_quantum", kind="own", file="src/sched/cake.c",
         orig="quantum = (quantum * 7) >> 3;",
         repl="quantum = (quantum * 3) >> 2;",
         note="diffserv8/precedence tin quanta shrink by 3/4, not 7/8"),
    dict(name="avg_netoff_gain", kind="own", file="src/sched/cake.c",
         orig="(uint64_t)pkt->net_off << 16, 8);",
         repl="(uint64_t)pkt->net_off << 16, 4);",
         note="average header offset EWMA gain 1/16 instead of 1/256"),
    dict(name="lag_writeoff_skips_tins", kind="own", file="src/sched/cake.c",
         orig="\t\tsched_clamp_lag(&c->tins[i].time_next_packet, now, c->lag);",
         repl="\t\t(void)0;",
         note="a written-off lag leaves the tin clocks behind"),
    dict(name="resync_no_cap", kind="own", file="src/sched/cake.c",
         orig="if (c->time_next_packet > cap)\n\t\tc->time_next_packet = cap;",
         repl="if (0)\n\t\tc->time_next_packet = cap;",
         note="after an update the global clock may stay far ahead (slow old rate)"),
    dict(name="ingress_overflow_no_charge", kind="own", file="src/sched/cake.c",
         orig="\tif (c->p.ingress)\n\t\tcake_advance_shaper(c, b, pkt, now, true);\n\tpkt->drop_reason = SHAPER_DROP_OVERFLOW;",
         repl="\tpkt->drop_reason = SHAPER_DROP_OVERFLOW;",
         note="ingress: overflow drops do not advance the shapers"),
    dict(name="collision_keeps_host_charge", kind="own", file="src/sched/cake.c",
         orig="\t\tcake_host_bulk_dec(c, b, &b->flows[k]);",
         repl="\t\t(void)0;",
         note="a set collision onto a bulk queue leaves its old hosts charged"),
    dict(name="wash_ignored", kind="own", file="src/sched/cake.c",
         orig="classify_set_dscp(pkt, 0); /* the original",
         repl="(void)0; /* the original",
         note="wash does not clear the DSCP"),
    dict(name="fq_codel_no_anti_starvation", kind="own", file="src/sched/fq_codel.c",
         orig="if (l == &q->new_flows && q->old_flows.head != NULL)",
         repl="if (0 && l == &q->new_flows)",
         note="fq_codel: an emptied new flow is unlinked even if old flows wait"),
    dict(name="fq_codel_overflow_count", kind="own", file="src/sched/fq_codel.c",
         orig="fat->cv.count += i;",
         repl="(void)fat;",
         note="fq_codel: overflow drops are not added to CoDel's count"),
    dict(name="fqc_no_reentry", kind="own", file="src/sched/fq_codel.c",
         orig="if (delta > 1 &&",
         repl="if (0 && delta > 1 &&",
         note="fq_codel: a queue back above target soon after starts over at count 1"),
    dict(name="fqc_reentry_no_window", kind="own", file="src/sched/fq_codel.c",
         orig="(int64_t)(now - cv->drop_next) < (int64_t)(16 * q->c.interval_ns)",
         repl="1",
         note="fq_codel: re-entry resumes the old count however long ago it was"),
    dict(name="fqc_no_lastcount", kind="own", file="src/sched/fq_codel.c",
         orig="\t\tcv->lastcount = cv->count;",
         repl="\t\t(void)0;",
         note="fq_codel: lastcount is never kept (re-entry resumes from all drops ever)"),
    dict(name="fqc_reentry_delta_1", kind="own", file="src/sched/fq_codel.c",
         orig="if (delta > 1 &&",
         repl="if (delta > 0 &&",
         note="fq_codel: a re-entry with delta 1 keeps the old 1/sqrt(count)"),
    dict(name="fqc_reentry_no_newton", kind="own", file="src/sched/fq_codel.c",
         orig="\t\t\tfqc_newton_step(cv); /* from the old",
         repl="\t\t\tcv->rec_inv_sqrt = UINT16_MAX; /* from the old",
         note="fq_codel: a re-entry resumes count but drops at one per interval"),
    dict(name="fqc_l4s_mixed_ignored", kind="own", file="src/sched/fq_codel.c",
         orig="f->classic != 0 || marked",
         repl="f->classic > 100000 || marked",
         killer="unit/test_fq_codel",
         note="fq_codel l4s: the step marks L4S packets queued with classic ones"),
    dict(name="fqc_l4s_no_floor", kind="own", file="src/sched/fq_codel.c",
         orig="if (q->c.l4s_step_ns < floor)",
         repl="if (0 && q->c.l4s_step_ns < floor)",
         killer="unit/test_fq_codel",
         note="fq_codel l4s: the step has no MTU floor on a slow link"),
    dict(name="fqc_l4s_ce_classic", kind="own", file="src/sched/l4s.h",
         orig="} else if (ecn != L4S_ECN_CE) {",
         repl="} else {",
         killer="unit/test_fq_codel",
         note="l4s (cake, fq_codel): a CE packet is always classic, whatever its flow sent"),
    dict(name="l4s_ect1_uncounted", kind="own", file="src/sched/l4s.h",
         orig="(*ect1_packets)++;",
         repl="(void)ect1_packets;",
         killer="sim/test_cake_l4s",
         note="l4s (cake, fq_codel): ECT(1) arrivals are not counted"),
    dict(name="l4s_ect1_keeps_classic", kind="own", file="src/sched/l4s.h",
         orig="*flow_flags &= (uint8_t)~classic_flag;",
         repl="(void)0;",
         killer="sim/test_cake_l4s",
         note="l4s (cake, fq_codel): a flow once classic judges its CE packets classic after ECT(1)"),
    # ---- the classifier (the VLAN and AH hashing parts are left alone
    # while they are being rewritten)
    dict(name="cls_in_frame_one_past", kind="review", file="src/classify/classify.c",
         orig="return off <= p->hdr_len && n <= p->hdr_len - off;",
         repl="return off <= p->hdr_len && n <= p->hdr_len - off + 1;",
         note="header length check lets a header end one byte past the frame"),
    dict(name="cls_wash_clears_ecn_v4", kind="review", file="src/classify/classify.c",
         orig="ds = (uint8_t)((dscp << 2) | (ip[1] & ECN_MASK));",
         repl="ds = (uint8_t)(dscp << 2);",
         note="setting the DSCP of IPv4 clears the ECN bits"),
    dict(name="cls_wash_clears_ecn_v6", kind="review", file="src/classify/classify.c",
         orig="ds = (uint8_t)((dscp << 2) | (cls_ipv6_get_tc(ip) & ECN_MASK));",
         repl="ds = (uint8_t)((dscp << 2) | (cls_ipv6_get_tc(ip) & 0x01));",
         note="setting the DSCP of IPv6 keeps only one ECN bit"),
    dict(name="cls_ce_on_not_ect", kind="review", file="src/classify/classify.c",
         orig="if ((ds & ECN_MASK) == 0)\n\t\treturn 0; /* Not-ECT",
         repl="if (0)\n\t\treturn 0; /* Not-ECT",
         note="CE is marked on Not-ECT packets"),
    dict(name="cls_tos_checksum_low_byte", kind="review", file="src/classify/classify.c",
         orig="\tip[11] = (uint8_t)sum;",
         repl="\t(void)0;",
         note="rewriting the IPv4 TOS leaves the checksum's low byte stale"),
    dict(name="cls_v6_tc_clobbers_label", kind="review", file="src/classify/classify.c",
         orig="ip[1] = (uint8_t)((ip[1] & 0x0f) | ((tc & 0x0f) << 4));",
         repl="ip[1] = (uint8_t)((tc & 0x0f) << 4);",
         note="rewriting the IPv6 traffic class zeroes the flow label's top nibble"),
    dict(name="cls_fast_dst_offset", kind="review", file="src/classify/classify.c",
         orig="da = (uint32_t)cls_load32(ip + 16);",
         repl="da = (uint32_t)cls_load32(ip + 12);",
         note="fast path: IPv4 destination read from the source field"),
    dict(name="cls_slow_dst_offset", kind="review", file="src/classify/classify.c",
         orig="memcpy(f->dst, ip + 16, 4);",
         repl="memcpy(f->dst, ip + 12, 4);",
         note="IPv4 (tags, options, tunnels): destination read from the source field"),
    dict(name="cls_fast_host_swapped", kind="review", file="src/classify/classify.c",
         orig="p->src_hash = cls_host_hash4(key, sa);",
         repl="p->src_hash = cls_host_hash4(key, da);",
         note="fast path: IPv4 source-host hash taken from the destination"),
    dict(name="cls_v6_host_swapped", kind="review", file="src/classify/classify.c",
         orig="p->dst_hash = cls_host_hash6(key, ip + 24);",
         repl="p->dst_hash = cls_host_hash6(key, ip + 8);",
         note="fast path: IPv6 destination-host hash taken from the source"),
    dict(name="cls_v4_ports_asymmetric", kind="review", file="src/classify/classify.c",
         orig="if (bs > bd || (bs == bd && sport > dport)) {",
         repl="if (bs > bd) {",
         note="IPv4 flows between one address's ports hash by direction"),
    dict(name="cls_v6_ports_unswapped", kind="review", file="src/classify/classify.c",
         orig="w[4] = ((uint64_t)dport << 16) | sport;",
         repl="w[4] = ((uint64_t)sport << 16) | dport;",
         note="IPv6 flow hash: ports not swapped with the addresses (asymmetric)"),
    dict(name="cls_v4_proto_unhashed", kind="review", file="src/classify/classify.c",
         orig="w[1] = ((uint64_t)sport << 16) | dport | ((uint64_t)proto << 32) | (4ULL << 40);",
         repl="w[1] = ((uint64_t)sport << 16) | dport | ((uint64_t)(proto & 0) << 32) | (4ULL << 40);",
         note="IPv4 flow hash ignores the protocol (TCP and UDP on equal ports merge)"),
    dict(name="cls_first_frag_ported", kind="review", file="src/classify/classify.c",
         orig="is_frag = nofirst || (frag & 0x2000) != 0;",
         repl="is_frag = nofirst;",
         note="an IPv4 first fragment (MF set) is hashed with its ports"),
    dict(name="cls_fast_takes_mf", kind="review", file="src/classify/classify.c",
         orig="(cls_be16(ip + 6) & 0x3fff) != 0)\n\t\t\treturn false;",
         repl="(cls_be16(ip + 6) & 0x1fff) != 0)\n\t\t\treturn false;",
         note="fast path: an IPv4 first fragment (MF) is hashed with its ports"),
    dict(name="cls_ipv4_options_unskipped", kind="review", file="src/classify/classify.c",
         orig="cls_parse_l4(p, f, off + ihl, ip[9], is_frag, nofirst);",
         repl="cls_parse_l4(p, f, off + 20, ip[9], is_frag, nofirst);",
         note="IPv4 options are not skipped: ports read from the options"),
    dict(name="cls_synack_is_ack", kind="review", file="src/classify/classify.c",
         orig="\t\tif ((fl & TCP_FLAG_ACK) && !(fl & TCP_FLAG_SYN))",
         repl="\t\tif (fl & TCP_FLAG_ACK)",
         note="general parser: a SYN-ACK counts as a pure ACK"),
    dict(name="cls_fast_tcp_short", kind="review", file="src/classify/classify.c",
         orig="if (len < l4 + 20)\n\t\t\t\treturn false;\n\t\t\tfl = SH_PKT_IPV4 | SH_PKT_TCP;",
         repl="if (len < l4 + 8)\n\t\t\t\treturn false;\n\t\t\tfl = SH_PKT_IPV4 | SH_PKT_TCP;",
         note="fast path: an IPv4 TCP header cut short is read past the frame"),
    dict(name="cls_fast_ecn_one_bit", kind="review", file="src/classify/classify.c",
         orig="p->ecn = ds & ECN_MASK;",
         repl="p->ecn = ds & 0x01;",
         note="fast path: the ECN field keeps only its low bit"),
    dict(name="cls_fast_v6_version", kind="review", file="src/classify/classify.c",
         orig="if ((ip[0] >> 4) != 6 || len < l4 + 8)",
         repl="if (len < l4 + 8)",
         note="fast path: an IPv6 ethertype with a non-6 version is parsed as IPv6"),
    dict(name="cls_pppoe_offset", kind="review", file="src/classify/classify.c",
         orig="\t\toff += 8;\n\t\tp->net_off = (uint8_t)off;",
         repl="\t\toff += 6;\n\t\tp->net_off = (uint8_t)off;",
         note="PPPoE: the IP header is looked for 2 bytes early"),
    dict(name="cls_v6_ext_len", kind="review", file="src/classify/classify.c",
         orig="hl = ((uint32_t)d[pos + 1] + 1) * 8;",
         repl="hl = (uint32_t)d[pos + 1] * 8;",
         note="IPv6 extension header length without its first 8 bytes"),
    dict(name="cls_v6_frag_m_bit", kind="review", file="src/classify/classify.c",
         orig="if ((fo & 0xfff8) != 0) {",
         repl="if ((fo & 0xfff9) != 0) {",
         note="IPv6 first fragment (M set) taken as a later one"),
    dict(name="cls_l2_asymmetric", kind="review", file="src/classify/classify.c",
         orig="\tif (a > b) {",
         repl="\tif (0) {",
         note="non-IP flow hash depends on the direction"),
    dict(name="cls_arp_not_cs7", kind="review", file="src/classify/classify.c",
         orig="p->dscp = 56; /* CS7",
         repl="p->dscp = 0; /* CS7",
         note="ARP is not given CS7"),
    # ---- the ACK filter
    dict(name="af_after_no_wrap", kind="review", file="src/sched/ack_filter.c",
         orig="return (int32_t)(b - a) < 0;",
         repl="return a > b;",
         note="sequence comparison without wrap-around"),
    dict(name="af_flow_ignores_dport", kind="review", file="src/sched/ack_filter.c",
         orig="memcmp(a->th, b->th, 4) == 0 &&",
         repl="memcmp(a->th, b->th, 2) == 0 &&",
         note="same-connection test compares the source port only"),
    dict(name="af_flow_ignores_daddr", kind="review", file="src/sched/ack_filter.c",
         orig=" && memcmp(a->daddr, b->daddr, a->alen) == 0;",
         repl=";",
         note="same-connection test ignores the destination address"),
    dict(name="af_any_ack_flags", kind="review", file="src/sched/ack_filter.c",
         orig="if ((af_flags(c) & ~AF_TCP_ECN_MASK) != AF_TCP_ACK ||",
         repl="if ((af_flags(c) & AF_TCP_ACK) == 0 ||",
         note="a queued ACK with FIN/PSH/RST/URG may be removed"),
    dict(name="af_reserved_bits_ignored", kind="review", file="src/sched/ack_filter.c",
         orig="(c->th[12] & 0x0f) != 0)",
         repl="0)",
         note="a queued ACK with reserved/AE bits set may be removed"),
    dict(name="af_options_unchecked", kind="review", file="src/sched/ack_filter.c",
         orig="if (!co.only_benign)\n\t\treturn 0;",
         repl="if (0)\n\t\treturn 0;",
         note="a queued ACK with MSS/window-scale options may be removed"),
    dict(name="af_tsecr_unchecked", kind="review", file="src/sched/ack_filter.c",
         orig="af_after(co.tsval, topts->tsval) || af_after(co.tsecr, topts->tsecr)",
         repl="af_after(co.tsval, topts->tsval)",
         note="a queued ACK with a newer TSecr may be removed"),
    dict(name="af_data_removed", kind="review", file="src/sched/ack_filter.c",
         orig="if (c->payload != 0)\n\t\treturn 0;",
         repl="if (0)\n\t\treturn 0;",
         note="a queued segment carrying data may be removed"),
    dict(name="af_newer_ack_removed", kind="review", file="src/sched/ack_filter.c",
         orig="if (af_after(cack, tack))\n\t\treturn 0;",
         repl="if (0)\n\t\treturn 0;",
         note="a queued ACK newer than the trigger may be removed"),
    dict(name="af_dup_ack_removed", kind="review", file="src/sched/ack_filter.c",
         orig="if (cmp < 0 || (cmp == 0 && cack == tack))",
         repl="if (cmp < 0)",
         note="a duplicate ACK (same ACK, same SACK) is merged away"),
    dict(name="af_sack_dropped_by_plain", kind="review", file="src/sched/ack_filter.c",
         orig="if (a->nsack > 0 && b->nsack == 0)\n\t\treturn -1;",
         repl="if (0)\n\t\treturn -1;",
         note="a SACK-carrying ACK may be removed by a trigger without SACK",
         equivalent="the block loop below finds none of the candidate's blocks covered "
                    "by a trigger without SACK and returns -1 as well"),
    dict(name="af_no_sack_counts_more", kind="review", file="src/sched/ack_filter.c",
         orig="return b->nsack > 0 ? 1 : 0;",
         repl="return 1;",
         note="two ACKs without SACK: the trigger counts as carrying more"),
    dict(name="af_dsack_removed", kind="review", file="src/sched/ack_filter.c",
         orig="if (af_after(ack_a, sa))\n\t\t\treturn -1;",
         repl="if (0 && af_after(ack_a, sa))\n\t\t\treturn -1;",
         note="a D-SACK (block below the ACK) may be merged away"),
    dict(name="af_sack_end_uncovered", kind="review", file="src/sched/ack_filter.c",
         orig="covered = !af_after(b->sack[j][0], sa) && !af_after(ea, b->sack[j][1]);",
         repl="covered = !af_after(b->sack[j][0], sa);",
         note="SACK coverage checks the block start only"),
    dict(name="af_sack_equal_bytes", kind="review", file="src/sched/ack_filter.c",
         orig="return bytes_b > bytes_a ? 1 : 0;",
         repl="return bytes_b >= bytes_a ? 1 : 0;",
         note="equal SACKed bytes count as more information"),
    dict(name="af_ecn_change_merged", kind="review", file="src/sched/ack_filter.c",
         orig="if (elig != NULL && (af_flags(&c) & AF_TCP_ECN_MASK) != elig_ecn) {",
         repl="if (0) {",
         note="an ECE/CWR change no longer protects its carrier"),
    dict(name="af_conservative_takes_one", kind="review", file="src/sched/ack_filter.c",
         orig="if (found++ > 0) {",
         repl="if (found++ >= 0) {",
         note="conservative mode removes a lone redundant ACK"),
    dict(name="af_aggressive_not_adjacent", kind="review", file="src/sched/ack_filter.c",
         orig="\t    elig->next == trigger && ",
         repl="\t    ",
         note="aggressive mode removes a lone ACK that is not directly ahead"),
    dict(name="af_syn_trigger", kind="review", file="src/sched/ack_filter.c",
         orig="(af_flags(&trig) & (AF_TCP_ACK | AF_TCP_SYN)) != AF_TCP_ACK)",
         repl="(af_flags(&trig) & AF_TCP_ACK) == 0)",
         note="a SYN-ACK may act as a trigger"),
    dict(name="af_fragments_parsed", kind="review", file="src/sched/ack_filter.c",
         orig="if ((af_be16(ip + 6) & 0x3fff) != 0)\n\t\treturn -1;",
         repl="if (0)\n\t\treturn -1;",
         note="an IPv4 fragment's payload is parsed as a TCP header"),
    dict(name="af_ipv4_payload_no_options", kind="review", file="src/sched/ack_filter.c",
         orig="(int64_t)af_be16(ip + 2) - ihl, t);",
         repl="(int64_t)af_be16(ip + 2) - 20, t);",
         note="IPv4 payload length ignores the options"),
    dict(name="af_ts_len_unchecked", kind="review", file="src/sched/ack_filter.c",
         orig="if (olen != 10) {\n\t\t\t\to->only_benign = 0;",
         repl="if (olen < 10) {\n\t\t\t\to->only_benign = 0;",
         note="an over-long timestamp option counts as benign"),
    # ---- the configuration parser
    dict(name="cfg_int_range_loose", kind="review", file="src/config/config.c",
         orig="\tif (x < lo || x > hi) {\n\t\terrf(err, errlen, path, \"%lld is out",
         repl="\tif (x < lo || x > hi + 1) {\n\t\terrf(err, errlen, path, \"%lld is out",
         note="integer keys accept one past their maximum"),
    dict(name="cfg_unit_range_loose", kind="review", file="src/config/config.c",
         orig="\tif (x < lo || x > hi) {\n\t\terrf(err, errlen, path, \"\\\"%s\\\" is out",
         repl="\tif (x < lo / 2 || x > hi) {\n\t\terrf(err, errlen, path, \"\\\"%s\\\" is out",
         note="rates, times and sizes down to half their minimum are accepted"),
    dict(name="cfg_target_ms", kind="review", file="src/config/config.c",
         orig="\t\td->n->target_us = (uint32_t)(u / 1000);",
         repl="\t\td->n->target_us = (uint32_t)(u / 1000000);",
         note="cake's target stored in ms instead of µs"),
    dict(name="cfg_time_us_ns", kind="review", file="src/config/config.c",
         orig="set_field(d->n, k, ns / 1000);",
         repl="set_field(d->n, k, ns);",
         note="fq_codel interval/ce_threshold stored in ns instead of µs"),
    dict(name="cfg_rtt_target_tenth", kind="review", file="src/config/config.c",
         orig="p->target_us = p->rtt_us / 20 > 0 ? p->rtt_us / 20 : 1;",
         repl="p->target_us = p->rtt_us / 10 > 0 ? p->rtt_us / 10 : 1;",
         note="rtt: the implied target is rtt/10 instead of rtt/20"),
    dict(name="cfg_metro_interval", kind="review", file="src/config/config.c",
         orig="{ \"metro\", 500, 10000 },",
         repl="{ \"metro\", 500, 1000 },",
         note="the metro preset's interval is 1 ms instead of 10 ms"),
    dict(name="cfg_pppoe_ptm_overhead", kind="review", file="src/config/config.c",
         orig="{ \"pppoe-ptm\", 30, -1, SCHED_FRAMING_PTM },",
         repl="{ \"pppoe-ptm\", 27, -1, SCHED_FRAMING_PTM },",
         note="pppoe-ptm adds 27 bytes instead of 30"),
    dict(name="cfg_ethernet_mpu", kind="review", file="src/config/config.c",
         orig="{ \"ethernet\", 38, 84, -1 },",
         repl="{ \"ethernet\", 38, 64, -1 },",
         note="ethernet's mpu is 64 instead of 84"),
    dict(name="cfg_conservative_adds", kind="review", file="src/config/config.c",
         orig="\t\tif (strcmp(tok, \"conservative\") == 0)\n",
         repl="\t\tif (0)\n",
         note="conservative adds 48 instead of setting it"),
    dict(name="cfg_raw_keeps_mode", kind="review", file="src/config/config.c",
         orig="p->overhead_mode = !raw;",
         repl="p->overhead_mode = true;",
         note="raw does not turn overhead mode off"),
    dict(name="cfg_overhead_sum_unbounded", kind="review", file="src/config/config.c",
         orig="if (overhead < -64 || overhead > 256) {",
         repl="if (overhead < -64) {",
         note="overhead keywords may add up past 256 bytes"),
    dict(name="cfg_loss_permille", kind="review", file="src/config/config.c",
         orig="em->loss_ppm = (uint32_t)(pct * 10000. + 0.5);",
         repl="em->loss_ppm = (uint32_t)(pct * 1000. + 0.5);",
         note="emulate.loss: percent converted to ppm off by ten"),
    dict(name="cfg_discipline_forgets_overhead", kind="review", file="src/config/config.c",
         orig="\t\t\tdef.overhead = n.overhead;",
         repl="\t\t\t(void)0;",
         note="changing the discipline forgets the overhead"),
    dict(name="cfg_key_any_discipline", kind="review", file="src/config/config.c",
         orig="if (!(k->disciplines & (1u << n.discipline))) {",
         repl="if (0) {",
         note="keys of another discipline are accepted silently"),
    dict(name="autorate_series_ends_at_once", kind="review", file="src/rtt/autorate.c",
         orig="\tif (a->series.below_prev && a->series.start_rate != 0) {",
         repl="\tif (a->series.start_rate != 0) {",
         note="one interval read low in a path step ends the series of cuts"),
    dict(name="autorate_flat_level_one_interval", kind="review", file="src/rtt/autorate.c",
         orig="\tif (iv->delay_pair < a->series.flat_delay_ns)\n\t\ta->series.flat_delay_ns = iv->delay_pair;",
         repl="\tif (iv->delay < a->series.flat_delay_ns + 0 * iv->delay_pair)\n\t\ta->series.flat_delay_ns = iv->delay;",
         note="a path decision takes one interval read low as the step's size"),
    dict(name="autorate_owd_under_way_ignored", kind="review", file="src/rtt/autorate.c",
         orig="\t\tm = down->in.owd_n != 0 ? down->in.owd_now : 0;",
         repl="\t\tm = 0;",
         note="the upstream is cut for a downstream queue that rose in the interval under way"),
    dict(name="autorate_owd_under_way_lowest", kind="review", file="src/rtt/autorate.c",
         orig="\t\tm = down->in.owd_n != 0 ? down->in.owd_now : 0;",
         repl="\t\tm = down->in.owd_n != 0 ? down->in.owd_min : 0;",
         note="the upstream's share is taken against the queue before it grew"),
    dict(name="autorate_series_carry_never", kind="review", file="src/rtt/autorate.c",
         orig="\t\tif (a->series.prev_start > a->rate && now - a->series.end_ns < SERIES_CARRY_NS)",
         repl="\t\tif (a->series.prev_start > a->rate && now < a->series.end_ns)",
         note="a path step read short at first restores only the rate its first cut left"),
    dict(name="autorate_undo_never", kind="review", file="src/rtt/autorate.c",
         orig="\t       a->arrived_rate * 100 <= a->rate * a->p.near_hi_pct;",
         repl="\t       a->arrived_rate * 100 <= a->rate * a->p.near_hi_pct && 0;",
         note="a downstream cut for the upstream's queue is kept"),
    dict(name="autorate_undo_modem_draining", kind="review", file="src/rtt/autorate.c",
         orig="\t       a->arrived_rate * 100 <= a->rate * a->p.near_hi_pct;",
         repl="\t       a->arrived_rate * 0 <= a->rate * a->p.near_hi_pct;",
         note="a downstream cut is undone while its modem still drains its queue into us"),
    dict(name="autorate_undo_on_hold", kind="review", file="src/rtt/autorate.c",
         orig="\t       a->other.cut_ns >= a->series.last_cut_ns + a->p.refractory_ns &&",
         repl="\t       a->other.down_ns >= a->series.last_cut_ns + a->p.refractory_ns &&",
         killer="unit/test_autorate",
         note="a downstream cut is undone when the upstream only held while its queue drained"),
    dict(name="autorate_probing_by_rate", kind="review", file="src/rtt/autorate.c",
         orig="\treturn (double)(carried < rate ? carried : rate) / (double)line;",
         repl="\treturn (double)rate / (double)line + 0 * (double)carried;",
         killer="unit/test_autorate",
         note="the one probing is judged by its rate, not by what it carries"),
    dict(name="autorate_undo_keeps_line", kind="review", file="src/rtt/autorate.c",
         orig="\tif (a->series.start_line > a->series.bloat_rate)\n\t\ta->series.bloat_rate = a->series.start_line;",
         repl="\t(void)a->series.start_line;",
         killer="unit/test_autorate",
         note="an undone cut leaves the line it measured, which was TCP's pace, not the line"),
    dict(name="autorate_path_drops_on_lowest", kind="review", file="src/rtt/autorate.c",
         orig="\tunder = iv->below * 2 > iv->n;",
         repl="\tunder = iv->raw < a->path.ns + 0 * iv->below * iv->n;",
         killer="sim/test_autorate",
         note="one flow whose baseline took a path step drops the path's part for all"),
    dict(name="autorate_cut_from_part_interval", kind="review", file="src/rtt/autorate.c",
         orig="\t\tiv->through = iv->last_sent < a->rate ? iv->last_sent : a->rate;",
         repl="\t\tiv->through = iv->doubted + 0 * iv->last_sent;",
         killer="sim/test_autorate",
         note="an upstream cut is sized from what TCP sent in part of an interval"),
    dict(name="autorate_jitter_is_drain", kind="review", file="src/rtt/autorate.c",
         orig="\tiv->jitter = alt == 0 &&",
         repl="\tiv->jitter = alt == 1 &&",
         killer="sim/test_autorate",
         note="a path step's dip of a few ms is taken as a drain, and its return as a rise"),
    dict(name="autorate_stall_is_line", kind="review", file="src/rtt/autorate.c",
         orig="\tran = wall - (off < wall ? off : wall);",
         repl="\tran = wall + 0 * off;",
         killer="sim/test_autorate",
         note="a stall of the shaper's worker is read as a line at a fraction of the rate"),
    dict(name="autorate_acks_series_held", kind="review", file="src/rtt/autorate.c",
         orig="\t       !series_check_holds(a, iv);",
         repl="\t       !(series_check_holds(a, iv) && 0);",
         killer="sim/test_autorate",
         note="an upload its own cuts left carrying few bytes never takes a path step"),
    dict(name="autorate_acks_check_stale", kind="review", file="src/rtt/autorate.c",
         orig="\t\ta->series.cut_delay_ns = iv->own;\n\t\ta->series.flat_checks = 0;\n\t}\n\treturn AUTORATE_HOLD;",
         repl="\t\ta->series.flat_checks = 0;\n\t}\n\treturn AUTORATE_HOLD;",
         killer="sim/test_autorate",
         note="an ACK direction's held check judges the next against the rise of the cut before"),
    dict(name="sub_dequeue_ahead_first", kind="review", file="src/subscriber/sub_sched.c",
         orig="\t\t\t\t      ? d->heap[0].sub\n\t\t\t\t      : ahead[ia].sub;",
         repl="\t\t\t\t      ? ahead[ia].sub\n\t\t\t\t      : ahead[ia].sub;",
         killer="sim/test_subscriber_sched",
         note="a subscriber served since, due sooner than those taken ahead, waits behind them"),
    dict(name="sub_dequeue_ahead_lost", kind="review", file="src/subscriber/sub_sched.c",
         orig="\tfor (; ia < na; ia++)\n\t\theap_set(ss, dir, ahead[ia].sub, ahead[ia].key);",
         repl="\t(void)na;",
         killer="sim/test_subscriber_sched",
         note="subscribers taken ahead and not served fall out of the heap with their packets"),
    dict(name="cake_tin_bit_never_cleared", kind="review", file="src/sched/cake.c",
         orig="\telse\n\t\tc->tins_with_flows &= (uint8_t)~b->bit;",
         repl="\telse\n\t\t(void)0;",
         killer="sim/test_cake_top_flows",
         note="the choice of tin picks a tin whose flows are gone"),
    dict(name="sub_dequeue_tie_not_last", kind="review", file="src/subscriber/sub_sched.c",
         orig="(d->heap[0].key == ahead[ia].key && d->heap[0].sub == last)",
         repl="(d->heap[0].key < ahead[ia].key && d->heap[0].sub == last)",
         killer="sim/test_subscriber_sched",
         note="a subscriber still due goes behind others due at the same time (not the heap's order)"),
    dict(name="sub_lag_not_folded", kind="review", file="src/subscriber/sub_sched.c",
         orig="\t\tpkt = sched_dequeue(s->dir[dir].cake, now, dropped);\n\t\tfold_lag(s, dir);",
         repl="\t\tpkt = sched_dequeue(s->dir[dir].cake, now, dropped);",
         killer="sim/test_subscriber_sched",
         note="a subscriber's written-off time never reaches its record"),
    dict(name="sub_unknown_tick_bytes_kept", kind="review", file="src/subscriber/sub_sched.c",
         orig="\t\tss->d[d].tick_bytes[sub] = 0;\n",
         repl="",
         killer="sim/test_subscriber_unknown",
         note="a new address in a reused slot has its arrivals counted from the last one's bytes"),
    dict(name="sub_grow_tick_bytes_lost", kind="review", file="src/subscriber/sub_sched.c",
         orig="\t\t\tc->tick_bytes[dir][REMAP(i)] = d->tick_bytes[i];\n",
         repl="",
         killer="sim/test_subscriber_unknown",
         note="after a growth every subscriber's arrivals count from its start"),
    dict(name="sub_link_pacer_keeps_wait", kind="review", file="src/subscriber/sub_sched.c",
         orig="\tsched_rescale_clock(&d->link_next, now, old, d->link_rate);",
         repl="\t(void)old, (void)now;",
         killer="sim/test_subscriber_sched",
         note="the link pacer keeps a wait set at the old rate after the link's rate rises"),
    dict(name="sub_link_pacer_restarts_at_now", kind="review", file="src/subscriber/sub_sched.c",
         orig="uint64_t skipped = sched_clamp_lag(&d->link_next, now, d->link_lag);",
         repl="uint64_t skipped = sched_clamp_lag(&d->link_next, now, 0);",
         killer="sim/test_subscriber_sched",
         note="a link pacer that fell behind restarts at now: a worker slower than the link "
              "releases one frame in such a turn"),
    dict(name="sub_link_pacer_idle_credit", kind="review", file="src/subscriber/sub_sched.c",
         orig="\tif (d->queued == 0 && d->link_next < now)\n\t\td->link_next = now;\n",
         repl="",
         killer="sim/test_subscriber_sched",
         note="an idle direction's link pacer keeps its lag as credit: a burst after idle"),
    dict(name="budget_no_subs_floor", kind="review", file="src/dataplane/budget.c",
         orig="\treturn one > floor ? one : floor;",
         repl="\treturn one > floor ? one : one;",
         note="the subscribers' joint limit without its floor per CAKE"),
    dict(name="flush_some_skip_too_far", kind="review", file="src/sched/cake.c",
         orig="\t\t\tpos += 1 + skip;",
         repl="\t\t\tpos += 2 + skip;",
         killer="sim/test_subscriber_sched",
         note="the joint limit's search steps over a queue holding packets"),
    dict(name="cfg_autorate_min_above_max", kind="review", file="src/config/config.c",
         orig="if (ar.min_rate > ar.max_rate) {",
         repl="if (0) {",
         note="autorate accepts min above max"),
    dict(name="cfg_autorate_start_min", kind="review", file="src/config/config.c",
         orig="\t\tar.start_rate = ar.max_rate;",
         repl="\t\tar.start_rate = ar.min_rate;",
         note="autorate starts at min instead of max by default"),
    dict(name="cfg_mode_setuid", kind="review", file="src/config/config_daemon.c",
         orig="m > 0777) {",
         repl="m > 07777) {",
         note="socket modes with setuid/sticky bits are accepted"),
    dict(name="cfg_socket_relative", kind="review", file="src/config/config_daemon.c",
         orig="if (out[0] != '/') {",
         repl="if (0) {",
         note="a relative (or network-looking) control socket path is accepted"),
    dict(name="cfg_extra_socket_admin", kind="review", file="src/config/config_daemon.c",
         orig="s->level = SHAPER_LEVEL_USER; /* an extra socket",
         repl="s->level = SHAPER_LEVEL_ADMIN; /* an extra socket",
         note="an extra control socket defaults to admin instead of user"),
    dict(name="cfg_default_level_operator", kind="review", file="src/config/config_daemon.c",
         orig="c->control_default_level = SHAPER_LEVEL_USER;",
         repl="c->control_default_level = SHAPER_LEVEL_OPERATOR;",
         note="control.default_level defaults to operator"),
    dict(name="cfg_socket_dup_path", kind="review", file="src/config/config_daemon.c",
         orig="if (strcmp(c->control_sockets[i].path, c->control_socket) == 0) {",
         repl="if (0) {",
         note="an extra socket on control.socket's path is accepted"),
    dict(name="cfg_port_zero", kind="review", file="src/config/config_daemon.c",
         orig="errno != 0 || port < 1 ||",
         repl="errno != 0 ||",
         note="metrics.listen accepts port 0"),
    dict(name="cfg_idle_sleep_rounds_down", kind="review", file="src/config/config_daemon.c",
         orig="c->idle_sleep_us = (uint32_t)((ns + 999) / 1000);",
         repl="c->idle_sleep_us = (uint32_t)(ns / 1000);",
         note="idle_sleep below 1 µs rounds to 0 (no sleep)"),
    dict(name="cfg_dup_lcore", kind="review", file="src/config/config_daemon.c",
         orig="if (c->worker_lcore[j] == (unsigned int)n) {",
         repl="if (0) {",
         note="two workers on one lcore are accepted"),
    dict(name="cfg_same_device", kind="review", file="src/config/config_daemon.c",
         orig="if (!c->single_port && strcmp(c->port[0].device, c->port[1].device) == 0) {",
         repl="if (0) {",
         note="wan and lan on the same device are accepted"),
    dict(name="cfg_rx_desc_default", kind="review", file="src/config/config_daemon.c",
         orig="c->port[i].rx_desc = 1024;",
         repl="c->port[i].rx_desc = 512;",
         note="rx_descriptors defaults to 512"),
    dict(name="cfg_burst_default", kind="review", file="src/config/config_daemon.c",
         orig="c->burst = 32;",
         repl="c->burst = 64;",
         note="dataplane.burst defaults to 64"),
    dict(name="cfg_mbufs_one_dir", kind="review", file="src/config/config_daemon.c",
         orig="\t\tmbufs[1] = mbufs[0];",
         repl="\t\t(void)0;",
         note="one mbufs size sets the upstream pool only"),
    dict(name="cfg_listen_not_enabling", kind="review", file="src/config/config_daemon.c",
         orig="if (listen && !enabled_set)",
         repl="if (0 && listen && !enabled_set)",
         note="metrics.listen alone does not turn the endpoint on"),
    dict(name="cfg_fqc_limit_zero", kind="review", file="src/config/config.c",
         orig="n->discipline == SCHED_DISC_FIFO ? 0 : 1,",
         repl="n->discipline == SCHED_DISC_FIFO ? 0 : 0,",
         note="fq_codel accepts limit 0"),
    dict(name="cfg_ack_filter_true_aggressive", kind="review", file="src/config/config.c",
         orig="json_is_true(v) ? SCHED_ACK_FILTER_ON : SCHED_ACK_FILTER_OFF;",
         repl="json_is_true(v) ? SCHED_ACK_FILTER_AGGRESSIVE : SCHED_ACK_FILTER_OFF;",
         note="ack_filter: true means aggressive"),
    dict(name="cfg_string_len_off_by_one", kind="review", file="src/config/config.c",
         orig="if (strlen(json_string_value(v)) >= outlen) {",
         repl="if (strlen(json_string_value(v)) > outlen) {",
         note="a string one character too long is silently cut"),
    # ---- the rate pool shared by shards (snippets short: this file moves)
    dict(name="share_floor_div", kind="review", file="src/sched/share.c",
         orig="#define SHARE_FLOOR_DIV 1024u",
         repl="#define SHARE_FLOOR_DIV 64u",
         note="idle shards' floors take 1/64 of the link instead of 1/1024"),
    dict(name="share_check_loose", kind="review", file="src/sched/share.c",
         orig="link_rate < 2 * share_floor(link_rate, nshards) * nshards",
         repl="link_rate < share_floor(link_rate, nshards)",
         note="a link too slow to share among the shards is accepted"),
    dict(name="share_init_no_remainder", kind="review", file="src/sched/share.c",
         orig="(int64_t)(link_rate - part * nshards)",
         repl="(int64_t)0",
         note="the remainder of the even split is lost (rates sum below the link)"),
    dict(name="share_set_rate_sign", kind="review", file="src/sched/share.c",
         orig="(int64_t)link_rate - (int64_t)old,",
         repl="(int64_t)old - (int64_t)link_rate,",
         note="a new link rate moves the pool the wrong way"),
    dict(name="share_take_overdraws", kind="review", file="src/sched/share.c",
         orig="take = (uint64_t)avail < want ? (uint64_t)avail : want;",
         repl="take = want;",
         note="a shard takes what it wants even beyond the pool"),
    dict(name="share_cut_no_even_cap", kind="review", file="src/sched/share.c",
         orig="if (target > even)",
         repl="if (0 && target > even)",
         note="after a cut a shard may keep more than an even part"),
    dict(name="share_lower_not_returned", kind="review", file="src/sched/share.c",
         orig="(int64_t)(sh->rate - target),",
         repl="(int64_t)0,",
         note="a shard that lowers its rate does not give the difference back"),
    dict(name="share_rebind_no_split", kind="review", file="src/sched/share.c",
         orig="share_move_to(sh, s, split[sh->id], now);\n\t}",
         repl="(void)split;\n\t}",
         note="rebind after a cut waits for the next tick to lower the shard"),
    dict(name="share_fill_keeps_left", kind="review", file="src/sched/share.c",
         orig="\t\t\t\tleft -= cap[i];",
         repl="\t\t\t\t(void)0;",
         note="water-filling: a satisfied shard's need is not taken from what is left"),
    dict(name="share_spare_by_count", kind="review", file="src/sched/share.c",
         orig="extra[i] += left * w[i] / all_w;",
         repl="extra[i] += left / n;",
         note="the spare goes to every shard alike, not by weight"),
    dict(name="share_arrivals_ms", kind="review", file="src/sched/share.c",
         orig="(double)arrived * 1e9 / (double)dt",
         repl="(double)arrived * 1e6 / (double)dt",
         note="arrival rate off by 1000 (ms for ns)"),
    dict(name="share_arrivals_no_avg", kind="review", file="src/sched/share.c",
         orig="(inst - (double)avg) / SHARE_AVG_DIV;",
         repl="(inst - (double)avg) / 64;",
         note="the arrival average moves by 1/64 a tick instead of 1/4"),
    dict(name="share_reset_wraps", kind="review", file="src/sched/share.c",
         orig="enq >= sh->last_enq ? enq - sh->last_enq : enq;",
         repl="enq - sh->last_enq;",
         note="a counter reset counts as 2^64 bytes arrived"),
    dict(name="share_unattributed_idle", kind="review", file="src/sched/share.c",
         orig="weight = 1; /* traffic",
         repl="weight = 0; /* traffic",
         note="traffic without a host counted gets no weight"),
    dict(name="share_busy_not_all", kind="review", file="src/sched/share.c",
         orig="if (backlog > SHARE_BUSY_PKTS)",
         repl="if (backlog > 1000 * SHARE_BUSY_PKTS)",
         note="a backlogged shard asks for its arrivals, not for all"),
    dict(name="share_need_no_floor", kind="review", file="src/sched/share.c",
         orig="sh->arrivals / SHARE_SPARE_DIV + floor +",
         repl="sh->arrivals / SHARE_SPARE_DIV + 0 * floor +",
         note="a shard's need leaves out its floor"),
    dict(name="share_hosts_idle_early", kind="review", file="src/sched/share.c",
         orig=">= 2 * SHARE_HOST_WINDOW_NS) {",
         repl=">= SHARE_HOST_WINDOW_NS / 2) {",
         note="host count forgets a shard after half a window without packets"),
    dict(name="share_hosts_window_by_time", kind="review", file="src/sched/share.c",
         orig="h->cur_pkts >= SHARE_HOST_ROUNDS * h->cur_bits",
         repl="1",
         note="a host window closes by time alone (a slow link undercounts hosts)"),
    dict(name="share_init_counts_history", kind="review", file="src/sched/share.c",
         orig="sh->last_enq = sched_enqueued_bytes(s);\n\tsh->level",
         repl="sh->last_enq = 0;\n\tsh->level",
         note="a new shard counts all earlier bytes as arrived in its first tick"),
]


SUITES = ("unit", "sim")
SEED_ENV = "SHAPER_MUTATION_SEED"


def log(msg):
    print(msg, flush=True)


def check_snippets(root, mutants):
    bad = []
    for m in mutants:
        path = os.path.join(root, m["file"])
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            bad.append(f"{m['name']}: cannot read {m['file']}: {e}")
            continue
        n = text.count(m["orig"])
        if n != 1:
            bad.append(f"{m['name']}: snippet found {n} times in {m['file']} "
                       f"(need exactly 1): {m['orig']!r}")
    if bad:
        for b in bad:
            log("mutate: " + b)
        log("mutate: stale mutant snippets; re-target them against the current code")
        sys.exit(2)


def copy_tree(src, dst):
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=src, check=True, capture_output=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        s = os.path.join(src, rel)
        if not os.path.isfile(s):
            continue  # deleted but still in the index
        d = os.path.join(dst, rel)
        with open(s, "rb") as fh:
            data = fh.read()
        if os.path.isfile(d):
            with open(d, "rb") as fh:
                if fh.read() == data:
                    continue  # unchanged: keep its mtime, ninja keeps its objects
        os.makedirs(os.path.dirname(d), exist_ok=True)
        with open(d, "wb") as fh:  # a fresh mtime, so ninja rebuilds it
            fh.write(data)
        shutil.copymode(s, d)


def run(cmd, cwd, timeout, env=None):
    """(returncode, output), returncode None on timeout. The command runs
    in its own process group, killed whole on timeout (a mutant can make a
    test spin; its children must not outlive it)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True, env=env)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = p.communicate()
        return None, out or ""


def test_programs(build):
    """The unit and sim tests (without the format check), from meson's
    introspection: name, command, environment, working directory, and the
    program's path relative to the build dir when meson built it."""
    rc, out = run(["meson", "introspect", "--tests", build], build, 120)
    if rc != 0:
        sys.exit("mutate: cannot list tests:\n" + out)
    tests = []
    for t in json.loads(out):
        suites = [s.split(":")[-1] for s in t["suite"]]
        suite = next((s for s in SUITES if s in suites), None)
        if suite is None or t["name"] == "clang_format":
            continue  # a mutant's formatting is not a test result
        rels = [os.path.relpath(os.path.realpath(a), os.path.realpath(build))
                for a in t["cmd"] if os.path.isabs(a)]
        rel = os.path.relpath(os.path.realpath(t["cmd"][0]), os.path.realpath(build))
        # A script's arguments may be programs meson builds (units_py's oracle).
        deps = [r for r in rels if not r.startswith("..")]
        tests.append(dict(name=f"{suite}/{t['name']}", cmd=t["cmd"], env=t["env"] or {},
                          workdir=t["workdir"] or build, deps=deps,
                          target=None if rel.startswith("..") else rel))
    return tests


def fingerprint(build, tests):
    """Hash of each test program meson built (None: a script, always run)."""
    fp = {}
    for t in tests:
        if t["target"] is None:
            fp[t["name"]] = None
            continue
        with open(os.path.join(build, t["target"]), "rb") as fh:
            fp[t["name"]] = hashlib.sha256(fh.read()).hexdigest()
    return fp


def build_tests(build, tests):
    rc, out = run(["ninja", "-C", build, "-t", "targets", "all"], build, 120)
    known = {line.rsplit(": ", 1)[0] for line in out.splitlines()} if rc == 0 else set()
    targets = sorted({d for t in tests for d in t["deps"] if d in known})
    # Through ccache (when meson found it), keyed relative to the scratch tree
    # and without the directory: objects the main build made are reused.
    env = dict(os.environ, CCACHE_NOHASHDIR="1",
               CCACHE_BASEDIR=os.path.dirname(os.path.abspath(build)))
    return run(["ninja", "-C", build] + targets, build, 1800, env)


def run_test(t, timeout):
    """(verdict, why): "pass", or "fail" with the failed cmocka cases, or "timeout"."""
    env = dict(os.environ)
    env.update(t["env"])
    rc, out = run(t["cmd"], t["workdir"], timeout, env)
    if rc is None:
        return "timeout", "timeout"
    if rc == 0:
        return "pass", ""
    cases = []
    for line in out.splitlines():
        if line.startswith("[  FAILED  ] ") and "test(s)" not in line:
            case = line[len("[  FAILED  ] "):].strip()
            if case and case not in cases:
                cases.append(case)
    return "fail", f"rc {rc}" + (" (" + ",".join(cases) + ")" if cases else "")


def order_tests(m, tests, durations, killers):
    """The test that killed this mutant last time (or its killer hint) first,
    then the tests named after the mutated file, then the quickest (times of
    earlier runs)."""
    stem = os.path.splitext(os.path.basename(m["file"]))[0]
    stems = {stem, stem.split("_")[0]}  # config_daemon.c: test_config
    first = killers.get(m["name"], m.get("killer"))
    return sorted(tests, key=lambda t: (t["name"] != first,
                                        not any(x in t["name"] for x in stems),
                                        durations.get(t["name"], 0.0)))


def load_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def save_json(path, data):
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def draw_sample(mutants, n, seed):
    """n mutants, one file after another in a seeded order, so that a draw
    covers as many files as it can."""
    rng = random.Random(seed)
    by_file = {}
    for m in mutants:
        by_file.setdefault(m["file"], []).append(m)
    files = sorted(by_file)
    rng.shuffle(files)
    for f in files:
        rng.shuffle(by_file[f])
    drawn = []
    while len(drawn) < n and any(by_file.values()):
        for f in files:
            if by_file[f] and len(drawn) < n:
                drawn.append(by_file[f].pop())
    return drawn


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(here), help="source tree (default: repo)")
    ap.add_argument("--only", default="", help="comma-separated mutant names")
    ap.add_argument("--file", default="", help="only the mutants of these files (comma-separated)")
    ap.add_argument("--sample", type=int, default=0, help="run a seeded draw of N mutants")
    ap.add_argument("--seed", default="",
                    help=f"seed of the draw (default: ${SEED_ENV}, else the UTC date)")
    ap.add_argument("--min-rate", type=float, default=0.0,
                    help="exit 1 if a file's killed / run mutants is below this")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds for one test program (unmutated: up to about 70 s)")
    ap.add_argument("--workdir", default="", help="scratch dir, kept (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args()

    mutants = MUTANTS
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {m["name"] for m in MUTANTS}
        if unknown:
            sys.exit("mutate: unknown mutants: " + ", ".join(sorted(unknown)))
        mutants = [m for m in MUTANTS if m["name"] in want]
    if args.file:
        files = set(args.file.split(","))
        mutants = [m for m in mutants if m["file"] in files]
    if args.list:
        for m in mutants:
            eq = " [equivalent: " + m["equivalent"] + "]" if m.get("equivalent") else ""
            log(f"{m['name']:34} {m['kind']:6} {m['file']}: {m['note']}{eq}")
        return 0
    equivalent = [m for m in mutants if m.get("equivalent") and not args.only]
    mutants = [m for m in mutants if m not in equivalent]
    if args.sample:
        seed = args.seed or os.environ.get(SEED_ENV) or \
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")
        mutants = draw_sample(mutants, args.sample, seed)
        log(f"mutate: sample seed {seed} (replay: {SEED_ENV}={seed} or --seed {seed}): "
            + ", ".join(m["name"] for m in mutants))
    check_snippets(args.root, MUTANTS)  # any stale snippet fails, drawn or not

    t0 = time.time()
    work = os.path.abspath(args.workdir) if args.workdir else \
        tempfile.mkdtemp(prefix="shaper-mutate-")
    tree = os.path.join(work, "src-tree")
    build = os.path.join(tree, "build-mutate")
    results = []
    try:
        copy_tree(args.root, tree)  # a kept --workdir is brought up to date
        if not os.path.isfile(os.path.join(build, "build.ninja")):
            rc, out = run(["meson", "setup", build], tree, 600)
            if rc != 0:
                sys.exit("mutate: meson setup failed:\n" + out)
        tests = test_programs(build)
        rc, out = build_tests(build, tests)
        if rc != 0:
            sys.exit("mutate: the unmutated tree does not build:\n" + out[-3000:])
        base = fingerprint(build, tests)
        # What earlier runs in this workdir learnt: each test's time, each
        # mutant's killer. Only the order of the tests depends on them.
        durations = load_json(os.path.join(work, "durations.json"))
        killers = load_json(os.path.join(work, "killers.json"))
        if not args.sample:
            # The full set: every test must pass unmutated first.
            for t in tests:
                t1 = time.time()
                verdict, why = run_test(t, args.timeout)
                durations[t["name"]] = time.time() - t1
                if verdict != "pass":
                    sys.exit(f"mutate: the unmutated tree fails {t['name']}: {why}")
        log(f"mutate: ready ({len(tests)} test programs, {time.time() - t0:.0f}s); "
            f"{len(mutants)} mutants")

        for m in mutants:
            path = os.path.join(tree, m["file"])
            with open(path, encoding="utf-8") as fh:
                orig_text = fh.read()
            t1 = time.time()
            ran, killer = 0, None
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(orig_text.replace(m["orig"], m["repl"], 1))
                rc, out = build_tests(build, tests)
                if rc != 0:
                    verdict, why = "invalid", "does not build"
                else:
                    fp = fingerprint(build, tests)
                    changed = [t for t in tests if fp[t["name"]] is None
                               or fp[t["name"]] != base[t["name"]]]
                    verdict, why = ("unchanged", "no test program changed") if not changed \
                        else ("survived", "")
                    for t in order_tests(m, changed, durations, killers):
                        ran += 1
                        t2 = time.time()
                        v, w = run_test(t, args.timeout)
                        if v == "pass":
                            durations[t["name"]] = time.time() - t2
                        if v != "pass":
                            verdict, why, killer = "killed", f"{t['name']} {w}", t
                            killers[m["name"]] = t["name"]
                            break
            finally:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(orig_text)
            results.append((m, verdict, why, killer))
            save_json(os.path.join(work, "durations.json"), durations)
            save_json(os.path.join(work, "killers.json"), killers)
            log(f"{verdict:9} {m['name']:34} {time.time() - t1:5.1f}s {ran:2} run  {why}")

        confirm_failed = []
        if args.sample and any(r[3] for r in results):
            # No baseline run in a sample: each kill must be the mutant's,
            # so the killing test has to pass on the unmutated tree.
            rc, out = build_tests(build, tests)
            if rc != 0:
                sys.exit("mutate: the unmutated tree does not build:\n" + out[-3000:])
            for t in {r[3]["name"]: r[3] for r in results if r[3]}.values():
                v, w = run_test(t, args.timeout)
                log(f"mutate: unmutated {t['name']}: {v} {w}")
                if v != "pass":
                    confirm_failed.append(t["name"])
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        elif results or args.keep:
            log(f"mutate: scratch tree kept in {work}")

    log("")
    fail = False
    for f in sorted({r[0]["file"] for r in results}
                    | {m["file"] for m in equivalent if not args.sample}):
        rs = [r for r in results if r[0]["file"] == f]
        killed = sum(1 for r in rs if r[1] == "killed")
        counted = sum(1 for r in rs if r[1] in ("killed", "survived"))
        rate = killed / counted if counted else 1.0
        extra = [f"{v} {', '.join(r[0]['name'] for r in rs if r[1] == v)}"
                 for v in ("survived", "unchanged", "invalid") if any(r[1] == v for r in rs)]
        eq = [m["name"] for m in equivalent if m["file"] == f and not args.sample]
        if eq:
            extra.append("equivalent (not run) " + ", ".join(eq))
        log(f"{f:26} killed {killed:3}/{counted:<3} {100 * rate:5.1f} %"
            + ("; " + "; ".join(extra) if extra else ""))
        if counted and rate < args.min_rate:
            fail = True
    killed = sum(1 for r in results if r[1] == "killed")
    counted = sum(1 for r in results if r[1] in ("killed", "survived"))
    log(f"{'all':26} killed {killed:3}/{counted:<3}")
    log(f"time: {time.time() - t0:.0f}s")
    if any(r[1] == "invalid" for r in results):
        log("mutate: FAIL, some mutants do not build: re-target or fix them")
        return 2
    if confirm_failed:
        log("mutate: FAIL, the unmutated tree fails " + ", ".join(confirm_failed))
        return 1
    if args.sample and any(r[1] in ("survived", "unchanged") for r in results):
        log("mutate: FAIL, a drawn mutant survived: a test is missing (or mark it "
            "equivalent, saying why)")
        return 1
    if fail:
        log(f"mutate: FAIL, a file is below --min-rate {args.min_rate}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
