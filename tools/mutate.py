#!/usr/bin/env python3
"""Mutation check of the scheduler: does the fast test suite
notice plausible single-line bugs in src/sched?

Each mutant replaces one exact snippet of one file (it must occur exactly
once, else the script stops: re-target the snippet after the code moved).
The tree is copied to a scratch directory (git-tracked and untracked,
non-ignored files), built there once, and for each mutant the file is
changed, rebuilt and the unit + sim suites (without clang_format) run; the
original is restored after every mutant. A mutant is "killed" when a test
fails or times out, "survived" when all pass, "invalid" when it does not
build (a broken mutant, not a test result). The working tree is never
touched.

    tools/mutate.py                      # all mutants
    tools/mutate.py --min-killed 18      # fail if < 18 of the 20 issue kinds die
    tools/mutate.py --only blue_inc_x4,no_decaying_list --keep
    tools/mutate.py --list
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# kind: "missed" / "caught" = the 20 kinds a review of the tests planted (15 of
# its mutants survived the suites then, 5 were caught); "own" = further mutants of ours.
# Snippets are kept short and distinctive so that a merge which moves code
# around only needs the snippet re-targeted.
MUTANTS = [
    # ---- the 15 kinds the review found the suites missed
    dict(name="no_decaying_list", kind="missed", file="src/sched/cake.c",
         orig="if (cobalt_busy(&f->cvars, now)) {",
         repl="if (0 && cobalt_busy(&f->cvars, now)) {",
         note="an emptied flow is retired at once instead of decaying"),
    dict(name="sp_flows_without_decaying", kind="missed", file="src/sched/cake.c",
         orig="t->sparse_flows = b->sparse_flow_count + b->decaying_flow_count;",
         repl="t->sparse_flows = b->sparse_flow_count;",
         note="sp_flows stops counting decaying flows"),
    dict(name="no_sparse_wait_to_bulk", kind="missed", file="src/sched/cake.c",
         orig="} else if (f->set == CAKE_SET_SPARSE_WAIT) {",
         repl="} else if (0 && f->set == CAKE_SET_SPARSE_WAIT) {",
         note="a packet for a SPARSE_WAIT flow does not make it BULK"),
    dict(name="no_new_flow_credit", kind="missed", file="src/sched/cake.c",
         orig="f->deficit = cake_flow_quantum(c, b, f);",
         repl="f->deficit = 0;",
         note="a new (or re-activated) flow gets no initial quantum"),
    dict(name="blue_never_relaxes", kind="missed", file="src/sched/cake.c",
         orig="b->cparams.p_dec = 1u << 20;",
         repl="b->cparams.p_dec = 0;",
         note="BLUE's decrement is zero (p_drop never relaxes)"),
    dict(name="blue_inc_x4", kind="missed", file="src/sched/cake.c",
         orig="b->cparams.p_inc = 1u << 24;",
         repl="b->cparams.p_inc = 1u << 26;",
         note="BLUE's increment 4/256 instead of 1/256"),
    dict(name="un_flows_never_decremented", kind="missed", file="src/sched/cake.c",
         orig="\t\tb->unresponsive_flow_count--;",
         repl="\t\t(void)0;",
         note="un_flows keeps counting flows whose p_drop relaxed to 0"),
    dict(name="cobalt_count_no_decay_on_empty", kind="missed", file="src/sched/cobalt.h",
         orig="if (v->count != 0 && now >= v->drop_next) {",
         repl="if (0 && v->count != 0 && now >= v->drop_next) {",
         note="COBALT count does not decay when the queue is found empty"),
    dict(name="no_4mtu_target_floor", kind="missed", file="src/sched/cobalt.h",
         orig="sojourn > 4 * p->mtu_time;",
         repl="sojourn > 0;",
         note="over_target no longer needs sojourn > 4 MTU-times"),
    dict(name="ingress_no_cobalt_charge", kind="missed", file="src/sched/cake.c",
         orig="len = cake_advance_shaper(c, b, pkt, now, true);",
         repl="len = pkt->adj_len;",
         note="ingress: COBALT drops do not advance the shaper clocks"),
    dict(name="no_bulk_flow_term", kind="missed", file="src/sched/cake.c",
         orig="c->p.ingress ? b->bulk_flow_count : 0,",
         repl="0,",
         note="ingress: the 2 x mtu_time x bulk_flows term is dropped"),
    dict(name="way_inds_counts_home", kind="missed", file="src/sched/cake.c",
         orig="if ((uint32_t)w != inner)",
         repl="if (1)",
         note="way_inds also counts hits in the home way"),
    dict(name="overflow_drops_newest", kind="missed", file="src/sched/cake.c",
         orig="pkt = cake_flow_pop(c, b, f);\n\tif (pkt == NULL) {\n\t\tc->overflow_timeout = 0;",
         repl=("pkt = f->pkts.tail; { struct sh_pkt *q = NULL, *r = f->pkts.head; "
               "while (r != NULL && r != pkt) { q = r; r = r->next; } if (pkt != NULL) { "
               "sh_pkt_list_unlink(&f->pkts, q, pkt); f->backlog -= pkt->len; "
               "b->backlog -= pkt->len; b->qlen--; c->backlog -= pkt->len; c->qlen--; "
               "c->buffer_used -= pkt->mem; } }"
               "\n\tif (pkt == NULL) {\n\t\tc->overflow_timeout = 0;"),
         note="overflow drops the fattest queue's newest packet, not its head"),
    dict(name="no_quantum_dither", kind="missed", file="src/sched/cake.c",
         orig="(sh_rand64(&c->rng) >> 48)) >>",
         repl="0) >>",
         note="host-scaled quantum without the random 16-bit addend"),
    dict(name="pk_delay_gain", kind="missed", file="src/sched/cake.c",
         orig="delay > b->peak_delay ? 2 : 8",
         repl="delay > b->peak_delay ? 4 : 8",
         note="pk_delay rises with gain 1/16 instead of 1/4"),
    # ---- the 5 kinds the review found caught
    dict(name="last_packet_dropped", kind="caught", file="src/sched/cake.c",
         orig="\t\t    f->pkts.head == NULL)",
         repl="\t\t    0)",
         note="COBALT may drop the last packet of a flow"),
    dict(name="no_host_quantum_division", kind="caught", file="src/sched/cake.c",
         orig="c->quantum_div[load]",
         repl="c->quantum_div[1]",
         note="the flow quantum is not divided by the host's bulk flows"),
    dict(name="failsafe_factor", kind="caught", file="src/sched/cake.c",
         orig="glob_dur + (glob_dur >> 1)",
         repl="glob_dur + (glob_dur >> 3)",
         note="failsafe clock at 8/9 of the rate instead of 2/3"),
    dict(name="shaped_tie_rule", kind="caught", file="src/sched/cake.c",
         orig="if (d <= 0 || d <= best) {",
         repl="if (d < best) {",
         note="shaped tin choice: soonest clock wins even when several are due"),
    dict(name="interval_formula", kind="caught", file="src/sched/cake.c",
         orig="b->cparams.interval = rtt_ns + target - target_ns;",
         repl="b->cparams.interval = rtt_ns;",
         note="interval not raised by the target's increase on slow links"),
    # ---- our own
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
]


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
        sys.exit("mutate: stale mutant snippets; re-target them against the current code")


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


def run(cmd, cwd, timeout):
    """(returncode, output), returncode None on timeout. The command runs
    in its own process group, killed whole on timeout (a mutant can make a
    test spin; meson's children must not outlive it)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
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


def fast_tests(build):
    rc, out = run(["meson", "test", "-C", build, "--list", "--suite", "unit", "--suite", "sim"],
                  build, 120)
    if rc != 0:
        sys.exit("mutate: cannot list tests:\n" + out)
    names = []
    for line in out.splitlines():
        if " / " not in line:
            continue
        name = line.split(" / ", 1)[1].strip()
        if name != "clang_format":  # a mutant's formatting is not a test result
            names.append(name)
    return names


def failed_tests(out):
    """Failed test programs, each with its failed cmocka cases if shown."""
    progs, cases = [], []
    for line in out.splitlines():
        if (" FAIL " in line or " TIMEOUT " in line) and " / " in line:
            name = line.split(" / ", 1)[1].split()[0]
            if name not in progs:
                progs.append(name)
        elif line.startswith("[  FAILED  ] ") and "test(s)" not in line:
            case = line[len("[  FAILED  ] "):].strip()
            if case and case not in cases:
                cases.append(case)
    return ",".join(progs) + (" (" + ",".join(cases) + ")" if cases else "")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(here), help="source tree (default: repo)")
    ap.add_argument("--only", default="", help="comma-separated mutant names")
    ap.add_argument("--min-killed", type=int, default=0,
                    help="exit 1 if fewer of the 20 issue-named mutants are killed")
    ap.add_argument("--timeout", type=int, default=90,
                    help="seconds for one test run (unmutated: about 12 s)")
    ap.add_argument("--workdir", default="", help="scratch dir (default: a new temp dir)")
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
    if args.list:
        for m in mutants:
            log(f"{m['name']:34} {m['kind']:6} {m['file']}: {m['note']}")
        return 0
    check_snippets(args.root, MUTANTS)

    t0 = time.time()
    work = args.workdir or tempfile.mkdtemp(prefix="shaper-mutate-")
    tree = os.path.join(work, "src-tree")
    build = os.path.join(tree, "build-mutate")
    results = []
    try:
        copy_tree(args.root, tree)  # a kept --workdir is brought up to date
        if not os.path.isdir(build):
            rc, out = run(["meson", "setup", build], tree, 600)
            if rc != 0:
                sys.exit("mutate: meson setup failed:\n" + out)
        rc, out = run(["ninja", "-C", build], tree, 1200)
        if rc != 0:
            sys.exit("mutate: the unmutated tree does not build:\n" + out[-3000:])
        tests = fast_tests(build)
        test_cmd = ["meson", "test", "-C", build, "--no-rebuild", "--maxfail", "1",
                    "--print-errorlogs"] + tests
        rc, out = run(test_cmd, tree, args.timeout)
        if rc != 0:
            sys.exit("mutate: the unmutated tree fails its tests:\n" + out[-3000:])
        log(f"mutate: baseline ok ({len(tests)} tests, {time.time() - t0:.0f}s); "
            f"{len(mutants)} mutants")

        for m in mutants:
            path = os.path.join(tree, m["file"])
            with open(path, encoding="utf-8") as fh:
                orig_text = fh.read()
            t1 = time.time()
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(orig_text.replace(m["orig"], m["repl"], 1))
                rc, out = run(["ninja", "-C", build], tree, 1200)
                if rc != 0:
                    verdict, why = "invalid", "does not build"
                else:
                    rc, out = run(test_cmd, tree, args.timeout)
                    if rc is None:
                        verdict, why = "killed", "timeout"
                    elif rc != 0:
                        verdict, why = "killed", failed_tests(out) or f"rc {rc}"
                    else:
                        verdict, why = "survived", ""
            finally:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(orig_text)
            results.append((m, verdict, why))
            log(f"{verdict:8} {m['name']:34} {time.time() - t1:5.1f}s {why}")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        elif results or args.keep:
            log(f"mutate: scratch tree kept in {work}")

    named = [r for r in results if r[0]["kind"] in ("missed", "caught")]
    named_killed = sum(1 for r in named if r[1] == "killed")
    killed = sum(1 for r in results if r[1] == "killed")
    valid = sum(1 for r in results if r[1] != "invalid")
    log("")
    log(f"issue-16 kinds killed: {named_killed}/{len(named)}")
    log(f"all mutants killed:    {killed}/{valid} (invalid: {len(results) - valid})")
    surv = [r[0]["name"] for r in results if r[1] == "survived"]
    log("survivors: " + (", ".join(surv) if surv else "none"))
    log(f"time: {time.time() - t0:.0f}s")
    if len(results) - valid:
        log("mutate: some mutants do not build; fix their replacement text")
        return 2
    if named_killed < args.min_killed:
        log(f"mutate: FAIL, {named_killed} < --min-killed {args.min_killed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
