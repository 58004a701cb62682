/*
 * Bare-metal driver of rbtree_intrusive.c on QEMU virt: counts the
 * instructions of the measured loops with the PMU cycle counter, which counts
 * one per instruction under -icount shift=0, and prints the figures in the
 * format of tests/timeline_bench.rs. Exits through semihosting.
 */
#include <stdint.h>
#include <stddef.h>

void measured_loop_cfs(uint64_t ops);
void measured_loop_eevdf(uint64_t ops);
size_t setup(int augmented, size_t n);
size_t leftmost_id(void);

#define OPS 20000

static volatile uint32_t *const uart = (volatile uint32_t *)0x09000000;

static void putc_(char c) { *uart = (uint32_t)c; }
static void puts_(const char *s) { while (*s) putc_(*s++); }
static void putu(uint64_t v)
{
	char buf[24];
	int i = 0;
	do buf[i++] = (char)('0' + v % 10); while (v /= 10);
	while (i) putc_(buf[--i]);
}

static inline uint64_t cycles(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, pmccntr_el0" : "=r"(v));
	return v;
}

__attribute__((noinline)) static void empty_loop(uint64_t ops)
{
	for (uint64_t i = 0; i < ops; i++)
		__asm__ volatile("" ::"r"(i));
}

int main(void)
{
	/* Enable the cycle counter (PMCR_EL0.E, PMCNTENSET_EL0.C). */
	__asm__ volatile("msr pmcr_el0, %0; msr pmcntenset_el0, %1; isb" ::"r"(1UL), "r"(1UL << 31));
	uint64_t start = cycles();
	empty_loop(OPS);
	uint64_t empty = cycles() - start;
	static const size_t sizes[] = { 8, 64, 1024, 10000 };
	for (int augmented = 0; augmented < 2; augmented++) {
		for (int k = 0; k < 4; k++) {
			setup(augmented, sizes[k]);
			start = cycles();
			if (augmented)
				measured_loop_eevdf(OPS);
			else
				measured_loop_cfs(OPS);
			uint64_t total = cycles() - start;
			uint64_t tenths = (total - (empty < total ? empty : total)) * 10 / OPS;
			puts_("rbtree_intrusive: tree=");
			puts_(augmented ? "eevdf" : "cfs");
			puts_(" n=");
			putu(sizes[k]);
			puts_(" instructions_per_op=");
			putu(tenths / 10);
			putc_('.');
			putu(tenths % 10);
			puts_(" leftmost=");
			putu(leftmost_id());
			putc_('\n');
		}
	}
	/* Semihosting SYS_EXIT, ADP_Stopped_ApplicationExit. */
	register uint64_t x0 __asm__("x0") = 0x18;
	register uint64_t x1 __asm__("x1") = 0x20026;
	__asm__ volatile("hlt #0xf000" ::"r"(x0), "r"(x1));
	return 0;
}
