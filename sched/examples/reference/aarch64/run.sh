#!/bin/sh
# Builds rbtree_intrusive.c for bare-metal AArch64 and prints its instructions
# per pick + dequeue + enqueue under QEMU -icount, for comparison with
# tests/timeline_bench.rs (same workload, same counting). Needs
# gcc-aarch64-linux-gnu and qemu-system-aarch64. Not part of CI.
set -eu
here=$(dirname "$0")
out=${TMPDIR:-/tmp}/rbtree_intrusive_aarch64.elf
aarch64-linux-gnu-gcc -O2 -ffreestanding -nostdlib -static -mgeneral-regs-only \
	-fno-tree-loop-distribute-patterns -DFREESTANDING -T "$here/link.ld" \
	-o "$out" "$here/start.S" "$here/main.c" "$here/../rbtree_intrusive.c"
exec qemu-system-aarch64 -M virt -cpu cortex-a72 -m 128M -nographic -semihosting \
	-icount shift=0,align=off,sleep=off -kernel "$out"
