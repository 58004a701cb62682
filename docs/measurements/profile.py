#!/usr/bin/env python3
"""Where a run's instructions go, function by function, from QEMU's execution log.

Under icount one instruction is one nanosecond and QEMU's `-d in_asm,exec,nochain` log
names every translation block it executes, so the log is an exact instruction profile:
this script rebuilds the call stack from the blocks (a block that ends in `bl`/`blr`
pushes its return address; a block that starts at a return address pops down to it)
and charges every instruction

- to the function it is in, with its inlined frames (`self`, DWARF line information),
- to every function on the call stack above it (`total`).

Run (after `cargo build --release --no-default-features`):

    cargo xtask runner target/aarch64-unknown-none-softfloat/release/fairway --icount --cpus 2 \\
      --append "workload=sched-pipe pinned=1 loops=2000" --qemu-log /tmp/q.log
    python3 docs/measurements/profile.py /tmp/q.log \\
      target/aarch64-unknown-none-softfloat/release/fairway --per 2000 --from sched_pipe

A block cut short by a device access (icount stops it there and runs the access as a
block of its own) is still counted whole: the console's writes after a run (`--to defmt`
ends before them).

`--per N` divides by N (round trips); `--from SYMBOL` starts counting at the first
block of the function whose name contains SYMBOL (boot and set-up are left out);
`--to SYMBOL` stops before the first block, after the start, of a function whose name
contains SYMBOL (`--to defmt` leaves out the report printed after the run); `--top K`
limits the tables.

`--categories` prints, instead of the tables by function, the run's instructions in
Fairway's counterparts of the parts Linux 6.1's round trip was split into (`CATEGORIES`
below, with Linux's figures), beside Linux's; `--depth3 LOG` adds the same run with
`depth=3` (its own log, same kernel and options), for the depth-3 and per-level columns:

    python3 docs/measurements/profile.py /tmp/root.log KERNEL --per 2000 \\
      --from sched_pipe::ping --to defmt --categories --depth3 /tmp/depth3.log

(`--per3 N` when the depth-3 run has another number of round trips.) The parts add up to
the profile's total; the script says so, and lists the largest frames charged to each.
"""
import argparse, bisect, re, subprocess
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("log"); ap.add_argument("elf")
ap.add_argument("--per", type=float, default=1.0)
ap.add_argument("--from", dest="start", default=None)
ap.add_argument("--top", type=int, default=45)
ap.add_argument("--cpu", type=int, default=None, help="only this vCPU's blocks")
ap.add_argument("--callers", default=None, help="also: who calls the functions named like this")
ap.add_argument("--library", default=None,
                help="also: instructions of inlined library frames (core, alloc) named like this, by the project's function around them")
ap.add_argument("--to", dest="stop", default=None,
                help="stop at the first block, after the start, of the function named like this")
ap.add_argument("--categories", action="store_true",
                help="instead of the tables by function: Fairway's counterparts of Linux's parts of the round trip")
ap.add_argument("--depth3", default=None, help="with --categories: the log of the same run at depth=3")
ap.add_argument("--per3", type=float, default=None, help="with --depth3: what its log is divided by, if not --per")
ap.add_argument("--by", choices=("frame", "symbol"), default="frame",
                help="with --categories: charge by the innermost project frame (default) or by the function symbol")
ap.add_argument("--each", type=int, default=6, help="with --categories: the largest frames listed for each part")
a = ap.parse_args()

# Function symbols, sorted by address (demangled).
nm = subprocess.run(["llvm-nm", "-C", "--defined-only", "-S", "-n", a.elf], capture_output=True, text=True).stdout
starts, names = [], []
for line in nm.splitlines():
    parts = line.split(maxsplit=3)
    if len(parts) == 4 and parts[2] in "tTwW":
        starts.append(int(parts[0], 16)); names.append(re.sub(r"::h[0-9a-f]{16}$", "", parts[3]))
def symbol(pc):
    k = bisect.bisect_right(starts, pc) - 1
    return names[k] if k >= 0 else "?"

# Translation blocks: translation -> (instruction pcs, last mnemonic). A block executed is
# known by the host address of its code (the `Trace` line's second field), not by its start
# address: under icount QEMU translates a block again when it must stop early (at the end of
# the instruction budget: a block of as many instructions as are left), and the blocks run
# from that address afterwards are the full one again. Taking an address's latest translation
# charged every later run of the full block with the short one's length (87 instructions per
# round trip too few in a 2,000-trip sched-pipe profile: 3 short translations in PELT's code).
def read_log(path):
    """The log's translations and the translations executed (indices into them), from
    --from's start to --to's stop."""
    blocks = []; cur = None
    latest = {}   # start address -> its latest translation
    pending = {}  # start address -> translation logged, not yet executed
    host = {}     # host code address -> translation
    execs = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("IN:"):
                cur = []; continue
            if cur is not None:
                m = re.match(r"0x([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)", line)
                if m:
                    cur.append((int(m.group(1), 16), m.group(2))); continue
                if cur:
                    pending[cur[0][0]] = latest[cur[0][0]] = len(blocks)
                    blocks.append(([p for p, _ in cur], cur[-1][1]))
                cur = None
            if line.startswith("Trace"):
                m = re.match(r"Trace (\d+): (\S+) \[[0-9a-f]+/([0-9a-f]+)/", line)
                if m:
                    pc = int(m.group(3), 16)
                    t = pending.pop(pc, None)  # a block runs right after its translation
                    if t is not None:
                        host[m.group(2)] = t
                    else:
                        t = host.get(m.group(2))
                        if t is None or blocks[t][0][0] != pc:  # not translated in the log
                            t = latest.get(pc)
                            if t is None:
                                latest[pc] = t = len(blocks); blocks.append(([pc], ""))
                    if a.cpu is None or int(m.group(1)) == a.cpu: execs.append(t)
    if a.start:
        k = next((i for i, t in enumerate(execs) if a.start in symbol(blocks[t][0][0])), None)
        if k is None: raise SystemExit(f"{path}: no block in a function named like {a.start}")
        execs = execs[k:]
    if a.stop:
        k = next((i for i, t in enumerate(execs) if i > 0 and a.stop in symbol(blocks[t][0][0])), None)
        if k is None: raise SystemExit(f"{path}: no block after the start in a function named like {a.stop}")
        execs = execs[:k]
    return blocks, execs

def inlined_frames(pcs):
    """Inlined frames of each of these instruction addresses (innermost first)."""
    out = subprocess.run(["llvm-addr2line", "-e", a.elf, "-i", "-f", "-C", "-a"], input="\n".join(hex(p) for p in pcs),
                         capture_output=True, text=True).stdout.splitlines()
    inlined = {}; pc = None
    for line in out:
        if line.startswith("0x"):
            pc = int(line, 16); inlined[pc] = []; continue
        if pc is not None and not line.startswith("/") and not line.startswith("??:"):
            if line != "??":
                inlined[pc].append(re.sub(r"::h[0-9a-f]{16}$", "", line))
    return inlined

# Fairway's counterparts of the parts Linux 6.1's pinned sched-pipe round trip was split
# into. Linux's figures (per round trip, both CPUs, at the root and with the two tasks three
# cgroup levels down) are from its round trip profiled the same way: QEMU's execution log of
# a `nokaslr` boot in the same emulator (qemu-system-aarch64 7.2, `virt`, cortex-a72, 2 CPUs,
# icount), each block charged to its function through the image's System.map
# (docs/performance.md, "Against Linux's scheduler code alone"; LINUX_ROUND_TRIP_PARTS in
# xtask/src/experiments/bench.rs).
CATEGORIES = [
    # (key, short name, Linux's part, Fairway's counterpart, Linux root, Linux depth 3)
    ("core", "scheduler core",
     "kernel/sched core (fair class, PELT, __schedule, wake-up, update_curr, rq clock)",
     "the fairway_sched crate (class stack, fair class, PELT, EEVDF or CFS, groups, uclamp, "
     "the CpuCore) and the kernel's schedule, wake-up, tick, balance, EAS and cpufreq hooks",
     5023, 10140),
    ("psi", "PSI", "PSI (kernel/sched/psi.c)", "none: Fairway keeps no pressure stall information", 1172, 3536),
    ("cpuacct", "cpuacct, rstat", "cpuacct and cgroup rstat",
     "none: Fairway's groups keep no CPU-time statistics (a task's runtime is update_curr's, in the core)", 76, 249),
    ("wait", "wait queues", "wait queues (kernel/sched/wait.c)", "fairway::tasks::wait", 682, 682),
    ("switch", "context switch", "arm64 context switch (__switch_to, ASID, FP, mitigations)",
     "switch_context (the switch assembly), task_trampoline, fairway::arch::aarch64::context", 1082, 1082),
    ("entry", "entry, vectors", "syscall entry and exit, vectors, KPTI, kstack randomisation",
     "no system calls: the exception vectors, entry and return, and the IRQ dispatch (ticks, IPIs)", 1746, 1746),
    ("pipe", "pipe", "VFS and pipe, LSM hooks", "fairway::tasks::pipe", 3707, 3708),
    ("rest", "the rest", "the rest (return-to-user work, locks, list debugging, RCU, clock reads, user space)",
     "locks (fairway::platform::sync), clock reads (the arch timer), hrtimers, cost counters (fairway_sched::stats, "
     "task traces), the workload's own loop (Linux's user space), library code not inlined, any other code",
     2317, 2841),
]
# Sums printed below the parts: (name, keys).
SUMS = [("total", [c[0] for c in CATEGORIES]),
        ("scheduler (core, PSI, cpuacct)", ["core", "psi", "cpuacct"]),
        ("scheduler, wait queues, switch", ["core", "psi", "cpuacct", "wait", "switch"])]

# Which part a frame belongs to: the first rule whose pattern matches the frame's name from
# its start (after a leading `<`) decides; None means "compiled into its caller": the
# instruction goes on to the next frame out. A frame no rule matches is library code
# (core, alloc, compiler_builtins, once_cell, spin, heapless, aarch64_cpu, tock_registers,
# methods of integers) and is compiled into its caller too.
#
# With --by frame (the default) every instruction is charged to the innermost frame of its
# inlined call chain (DWARF) that a rule gives a part, its function symbol last; with
# --by symbol to the function symbol only (what llvm-nm names), as Linux's profile was
# charged through System.map. The frame is the more faithful for Fairway: LLVM inlines across
# modules and crates, so the symbol `fairway::scheduling::switch::schedule` also executes the
# fair class, the locks, the clock read and the statistics, and `Pipe::read` the wait list,
# where Linux's locks (_raw_spin_lock...), clock reads (arch_counter_get_cntvct) and wait
# queues (wait.c) are functions of their own. Library code inlined into the project's is
# charged to the project's function around it (bounds checks, atomics, integer helpers),
# as in C those are compiled into the function that uses them; so are the accessors below.
# The frames come from DWARF's line table, which gives the instructions the compiler moved
# or shared between frames to one of them (the register moves around CostProbe's disabled
# check in update_entity_load, for instance, are the probe's): a frame's figure is exact to
# a few instructions per call, a part's to the instructions at its frames' edges.
RULES = [(re.compile(pattern), key) for pattern, key in [
    (r"fairway::platform::percpu::", None),          # per-CPU data: Linux's this_cpu_* are inline
    (r"fairway::arch::aarch64::cpu::", None),        # irq_save/irq_restore, this_cpu, relax: Linux's arch inlines
    (r"fairway::tasks::table::(task|current|set_current_sleeping|Task::)\b", None),
                                                     # the task table's accessors: Linux's task_struct pointer,
                                                     # `current` and set_current_state, inline
    (r"fairway::scheduling::switch::preempt_point\b", None),  # Linux's preempt_enable: inline
    (r"fairway_sched::stats::", "rest"),             # cost counters: latency statistics, cost probes
    (r"fairway_sched::", "core"),
    (r"fairway::scheduling::", "core"),              # the scheduling floor: schedule, wake-up, tick, balance,
                                                     # EAS, bandwidth, groups, PI, cpufreq (Linux's schedutil)
    (r"fairway::tasks::wait::", "wait"),
    (r"fairway::tasks::pipe::", "pipe"),
    (r"(switch_context|task_trampoline)$|fairway::arch::aarch64::context::", "switch"),
    (r"(exception_vector_table|exception_common)$|fairway::(arch::aarch64::exception|platform::irq|drivers::gic)::", "entry"),
    (r"fairway\w*::", "rest"),                       # the other project code
]]

def readable(name):
    """A frame's name with the legacy mangling's escapes undone."""
    for k, v in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","), ("$RF$", "&"), ("$BP$", "*"),
                 ("$u7b$", "{"), ("$u7d$", "}"), ("$u5b$", "["), ("$u5d$", "]"), ("$LP$", "("), ("$RP$", ")"),
                 ("$u3b$", ";"), ("$u27$", "'"), ("..", "::")):
        name = name.replace(k, v)
    return re.sub(r"^_<", "<", name)

def part_of(frame):
    name = re.sub(r"^[<&*]+", "", readable(frame))
    return next((key for pattern, key in RULES if pattern.match(name)), None)

def categories_of(blocks, execs):
    """Instructions by (part, the frame charged), and the total."""
    runs = defaultdict(int)
    for t in execs: runs[t] += 1
    count = defaultdict(int)
    for t, k in runs.items():
        for p in blocks[t][0]: count[p] += k
    inlined = inlined_frames(sorted(count)) if a.by == "frame" else {}
    parts = defaultdict(lambda: defaultdict(int))
    for p, k in count.items():
        fn = symbol(p)
        frames = (inlined.get(p) or []) + [fn]
        charged = next(((part_of(f), f) for f in frames if part_of(f)), ("rest", fn))  # library code not inlined
        parts[charged[0]][readable(charged[1])] += k
    return parts, sum(count.values())

def print_categories(blocks, execs):
    # Both runs' counts are divided by their round trips (--per, --per3) first: the
    # figures below are per round trip, whatever the runs' lengths.
    scale = lambda parts, by: {key: {f: k / by for f, k in d.items()} for key, d in parts.items()}
    root, n = categories_of(blocks, execs)
    checks = [("The parts", root, n)]
    root = defaultdict(dict, scale(root, a.per))
    print(f"{n} instructions in {len(execs)} blocks; {n / a.per:.1f} per {a.per:g}")
    if a.depth3:
        per3 = a.per3 or a.per
        blocks3, execs3 = read_log(a.depth3)
        deep, n3 = categories_of(blocks3, execs3)
        checks.append(("Depth 3: the parts", deep, n3))
        deep = defaultdict(dict, scale(deep, per3))
        print(f"depth 3: {n3} instructions in {len(execs3)} blocks; {n3 / per3:.1f} per {per3:g}")
    per = lambda d, key: sum(d[key].values())
    rows = [(c[1], [c[4]], [per(root, c[0])]) for c in CATEGORIES]
    linux = {c[0]: (c[4], c[5]) for c in CATEGORIES}
    if a.depth3:
        rows = [(c[1], [c[4], c[5], (c[5] - c[4]) / 3], [per(root, c[0]), per(deep, c[0]), (per(deep, c[0]) - per(root, c[0])) / 3])
                for c in CATEGORIES]
    for name, keys in SUMS:
        lr = sum(linux[k][0] for k in keys); ld = sum(linux[k][1] for k in keys)
        fr = sum(per(root, k) for k in keys)
        if a.depth3:
            fd = sum(per(deep, k) for k in keys)
            rows.append((name, [lr, ld, (ld - lr) / 3], [fr, fd, (fd - fr) / 3]))
        else:
            rows.append((name, [lr], [fr]))
    how = "the innermost project frame" if a.by == "frame" else "the function symbol"
    print(f"\nFairway's round trip in the parts of Linux 6.1's (instructions per round trip; charged by {how})")
    if a.depth3:
        print(f"{'':32}" + "".join(f"{h:>22}" for h in ("root", "depth 3", "per level")))
        print(f"{'':32}" + f"{'Linux':>11}{'Fairway':>11}" * 3)
    else:
        print(f"{'':32}{'Linux root':>12}{'Linux depth 3':>15}{'Fairway':>11}")
    for name, lx, fw in rows:
        if name == "total": print("-" * (32 + (66 if a.depth3 else 38)))
        if a.depth3:
            print(f"{name:32}" + "".join(f"{l:11,.0f}{round(f, 1) + 0.0:11,.1f}" for l, f in zip(lx, fw)))
        else:
            lkey = next((c for c in CATEGORIES if c[1] == name), None)
            ld = lkey[5] if lkey else sum(linux[k][1] for k in dict(SUMS)[name])
            print(f"{name:32}{lx[0]:12,.0f}{ld:15,.0f}{fw[0]:11,.1f}")
    print("\nWhat each part holds (Linux's; Fairway's counterpart):")
    for c in CATEGORIES:
        print(f"  {c[1]}: {c[2]}; {c[3]}.")
    print("\nThe largest frames charged to each part (per round trip" + ("; root, depth 3, per level)" if a.depth3 else ")"))
    for c in CATEGORIES:
        top = sorted(root[c[0]].items(), key=lambda kv: -kv[1])[:a.each]
        if a.depth3:
            names = set(root[c[0]]) | set(deep[c[0]])
            top = sorted(((f, root[c[0]].get(f, 0)) for f in names), key=lambda kv: -max(kv[1], deep[c[0]].get(kv[0], 0)))[:a.each]
        if not top: continue
        print(f"  {c[1]}:")
        for f, k in top:
            if a.depth3:
                d = deep[c[0]].get(f, 0)
                print(f"    {k:9.1f}{d:9.1f}{round((d - k) / 3, 1) + 0.0:9.1f}  {f[:110]}")
            else:
                print(f"    {k:9.1f}  {f[:120]}")
    if a.depth3:
        print("\nWhat a level adds, the largest frames ((depth 3 - root) / 3, per round trip)")
        grow = defaultdict(float)
        for key in deep:
            for f, d in deep[key].items(): grow[(key, f)] += d / 3
        for key in root:
            for f, k in root[key].items(): grow[(key, f)] -= k / 3
        for (key, f), g in sorted(grow.items(), key=lambda kv: -kv[1])[:2 * a.each]:
            print(f"  {g:9.1f}  {key:7} {f[:110]}")
    print()
    for label, parts, count in checks:
        added = sum(sum(d.values()) for d in parts.values())
        print(f"{label} add up to {added} instructions; the profile's total is {count}"
              + (" (equal)." if added == count else " (NOT EQUAL)."))

blocks, execs = read_log(a.log)

if a.categories:
    print_categories(blocks, execs)
    raise SystemExit(0)

# Inlined frames of every instruction that ran (innermost first).
pcs = sorted({p for t in set(execs) for p in blocks[t][0]})
inlined = inlined_frames(pcs)

self_count = defaultdict(int); total = defaultdict(int); callers = defaultdict(int); n = 0
library = defaultdict(int)
LIBRARY = re.compile(r"^(core::|alloc::|<|_\$LT\$(usize|alloc|core|u64|u32))")
stack = []  # (return address, function)
for t in execs:
    body, last = blocks[t]; b = body[0]
    if stack and any(r == b for r, _ in stack):
        while stack:
            r, _ = stack.pop()
            if r == b: break
    fn = symbol(b)
    above = {f for _, f in stack}
    for p in body:
        frames = inlined.get(p) or [fn]
        self_count[frames[0]] += 1
        if a.library and a.library in frames[0]:
            own = next((f for f in frames if not LIBRARY.match(f)), fn)
            library[own] += 1
        for f in set(frames) | above | {fn}:
            total[f] += 1
    n += len(body)
    if a.callers and a.callers in fn and stack:
        site = stack[-1][0] - 4
        frames = inlined.get(site) or [stack[-1][1]]
        callers[" <- ".join(frames[:3])] += len(body)
    if last in ("bl", "blr"):
        stack.append((body[-1] + 4, fn))
        if len(stack) > 200: stack = stack[-200:]

def show(title, table):
    print(f"\n{title} (per {a.per:g}: instructions)")
    for f, c in sorted(table.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{c / a.per:10.1f}  {f[:150]}")
print(f"{n} instructions in {len(execs)} blocks; {n / a.per:.1f} per {a.per:g}")
show("self, by innermost inlined frame", self_count)
show("total, with callees and inlined frames", total)
if a.library:
    show(f"instructions in library frames named like {a.library}, by the function around them", library)
if a.callers:
    show(f"instructions in {a.callers}, by call site (innermost inlined frames)", callers)
