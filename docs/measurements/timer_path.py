#!/usr/bin/env python3
"""Source files of the repository whose code runs on one timer wake-up's path,
from the IRQ's entry into the vector table to the `switch_context` that follows
`wake_from_timer`, and how often that path descends from the kernel's own code
into `sched/` (docs/core-driver.md, "A timer wake-up's path").

Run (from the repository root, after `cargo build --release --no-default-features`):

    printf '%s' '{"global": {"duration": -1, "calibration": "CPU0"}, "tasks": {"sleeper":
      {"loop": 20, "run": 200, "timer": {"ref": "t", "period": 2000}}}}' > /tmp/timer1.json
    cargo run -p fairway-sim --target host-tuple -- /tmp/timer1.json --encode /tmp/timer1.bin
    qemu-system-aarch64 -nodefaults -machine virt,gic-version=3 -cpu cortex-a57 -smp 1 -m 512M \
      -display none -monitor none -serial null -semihosting-config enable=on,target=native \
      -icount shift=0,align=off,sleep=off \
      -kernel target/aarch64-unknown-none-softfloat/release/fairway \
      -append "workload=rtapp scenario=0x40100000 scenario_size=$(stat -c %s /tmp/timer1.bin) icount=1" \
      -device loader,file=/tmp/timer1.bin,addr=0x40100000,force-raw=on \
      -d in_asm,exec,nochain -D /tmp/trace.log
    python3 docs/measurements/timer_path.py /tmp/trace.log \
      target/aarch64-unknown-none-softfloat/release/fairway 10

Every instruction of every translation block executed in the window is mapped
through DWARF line information (`llvm-addr2line -i`, inline frames included).
"""
import re, subprocess, sys
log, elf, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
def sym(name):
    out = subprocess.run(["llvm-nm", elf], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and name in parts[2]:
            return int(parts[0], 16)
    raise SystemExit("no symbol " + name)
vectors = sym("exception_vector_table"); wake = sym("wake_from_timer"); switch = sym("switch_context")
tbs = {}; execs = []
cur = None
with open(log, errors="replace") as f:
    for line in f:
        if line.startswith("IN:"):
            cur = []; first = None; continue
        if cur is not None:
            m = re.match(r"0x([0-9a-f]+):", line)
            if m:
                pc = int(m.group(1), 16); cur.append(pc)
                if len(cur) == 1: tb_start = pc
                continue
            if cur: tbs[tb_start] = cur
            cur = None
        if line.startswith("Trace"):
            m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
            if m: execs.append(int(m.group(1), 16))
# windows: the last vector entry before each wake_from_timer, to the next switch_context
windows = []; last_vector = None; i = 0
while i < len(execs):
    pc = execs[i]
    if vectors <= pc < vectors + 0x800: last_vector = i
    if pc == wake and last_vector is not None:
        j = i
        while j < len(execs) and execs[j] != switch: j += 1
        windows.append((last_vector, j)); last_vector = None; i = j
    i += 1
start, end = windows[nth]
pcs = set()
for pc in execs[start:end + 1]:
    pcs.update(tbs.get(pc, [pc]))
addrs = "\n".join(hex(p) for p in sorted(pcs))
out = subprocess.run(["llvm-addr2line", "-e", elf, "-i", "-f", "-C"], input=addrs, capture_output=True, text=True).stdout.splitlines()
files = {}
for k in range(1, len(out), 2):
    path = out[k].rsplit(":", 2)[0]
    files[path] = files.get(path, 0) + 1
repo = sorted(p for p in files if "/work/" in p and "/.cargo/" not in p and "/rustc/" not in p)
print(f"{len(windows)} timer wake-ups traced; window {nth}: {end - start + 1} blocks, {len(pcs)} distinct instructions")
print(f"repository files on the path: {len(repo)}")
for p in repo: print("  ", re.sub(r"^.*?/work/[^/]+/", "", p))

# Descents: how often the executed path enters sched/ code from the kernel's own
# code (consecutive blocks, by the innermost source file of each block's first
# instruction; library code in between is skipped).
seq = execs[start:end + 1]
uniq = sorted(set(seq))
out = subprocess.run(["llvm-addr2line", "-e", elf, "-f", "-C"], input="\n".join(hex(p) for p in uniq), capture_output=True, text=True).stdout.splitlines()
where = {}
for k, pc in enumerate(uniq):
    path = out[2 * k + 1]
    where[pc] = "sched" if "/sched/src/" in path else ("kernel" if "/work/" in path and "/src/" in path else None)
side = None; descents = 0; crossings = []
for pc in seq:
    w = where[pc]
    if w is None: continue
    if side == "kernel" and w == "sched": descents += 1
    side = w
print(f"descents from the kernel into sched/: {descents}")
