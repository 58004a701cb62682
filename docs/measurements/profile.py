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

`--per N` divides by N (round trips); `--from SYMBOL` starts counting at the first
block of the function whose name contains SYMBOL (boot and set-up are left out);
`--top K` limits the tables.
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

# Translation blocks: start -> (instruction pcs, last mnemonic).
blocks = {}; cur = None; first = None
execs = []
with open(a.log, errors="replace") as f:
    for line in f:
        if line.startswith("IN:"):
            cur = []; continue
        if cur is not None:
            m = re.match(r"0x([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)", line)
            if m:
                cur.append((int(m.group(1), 16), m.group(2))); continue
            if cur: blocks[cur[0][0]] = ([p for p, _ in cur], cur[-1][1])
            cur = None
        if line.startswith("Trace"):
            m = re.match(r"Trace (\d+): \S+ \[[0-9a-f]+/([0-9a-f]+)/", line)
            if m and (a.cpu is None or int(m.group(1)) == a.cpu): execs.append(int(m.group(2), 16))

if a.start:
    k = next((i for i, pc in enumerate(execs) if a.start in symbol(pc)), None)
    if k is None: raise SystemExit(f"no block in a function named like {a.start}")
    execs = execs[k:]

# Inlined frames of every instruction that ran (innermost first).
pcs = sorted({p for b in set(execs) for p in blocks.get(b, ([b], ""))[0]})
out = subprocess.run(["llvm-addr2line", "-e", a.elf, "-i", "-f", "-C", "-a"], input="\n".join(hex(p) for p in pcs),
                     capture_output=True, text=True).stdout.splitlines()
inlined = {}; pc = None
for line in out:
    if line.startswith("0x"):
        pc = int(line, 16); inlined[pc] = []; continue
    if pc is not None and not line.startswith("/") and not line.startswith("??:"):
        if line != "??":
            inlined[pc].append(re.sub(r"::h[0-9a-f]{16}$", "", line))

self_count = defaultdict(int); total = defaultdict(int); callers = defaultdict(int); n = 0
library = defaultdict(int)
LIBRARY = re.compile(r"^(core::|alloc::|<|_\$LT\$(usize|alloc|core|u64|u32))")
stack = []  # (return address, function)
for b in execs:
    body, last = blocks.get(b, ([b], ""))
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
