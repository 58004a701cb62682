/*
 * Calibration for the timeline benchmark: the same workload as
 * sched/examples/shared/timeline_workload.rs on an intrusive, pointer-based
 * red-black tree written the way kernel trees are (parent pointer and colour in
 * one word, no sentinel, mirror-image cases folded by direction, cached
 * leftmost), optionally augmented with the subtree minimum vruntime. It is the
 * algorithm of sched/src/fair/timeline/mod.rs with raw pointers instead of
 * bounds-safe indices (which keeps parent and colour in two fields, since its
 * links are 16-bit indices); it is not Linux code. Like the Rust tree, it
 * compiles the CFS and the EEVDF variants apart (the constant `aug`). One node
 * layout serves both here: with pointers, the node's size does not change the
 * instruction count, where the Rust CFS tree's 16-byte nodes let AArch64 fold
 * an index's zero-extension into the shifted add that makes it an address
 * (extended-register adds shift by at most 4).
 *
 * Host (x86_64, callgrind):
 *   gcc -O2 -o /tmp/rbtree_intrusive sched/examples/reference/rbtree_intrusive.c
 *   valgrind --tool=callgrind --toggle-collect='measured_loop*' /tmp/rbtree_intrusive cfs 8 100000
 * AArch64 (instructions under QEMU -icount, same counting as
 * tests/timeline_bench.rs): sched/examples/reference/aarch64/run.sh
 */
#include <stddef.h>
#include <stdint.h>

#ifndef FREESTANDING
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

struct node {
	struct node *child[2];
	uintptr_t parent_color; /* parent | BLACK */
	uint64_t key, vruntime, min_vruntime;
};

#define BLACK 1UL
#define LEFT 0
#define RIGHT 1

struct tree {
	struct node *root, *leftmost;
};

static inline struct node *parent_of(uintptr_t pc) { return (struct node *)(pc & ~BLACK); }
static inline int before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
static inline int is_red(const struct node *n) { return n && !(n->parent_color & BLACK); }
static inline void set_parent(struct node *n, struct node *p) { n->parent_color = (n->parent_color & BLACK) | (uintptr_t)p; }
static inline void set_black(struct node *n) { n->parent_color |= BLACK; }
static inline void set_red(struct node *n) { n->parent_color &= ~BLACK; }

static inline void recompute(struct node *x)
{
	uint64_t m = x->vruntime;
	for (int d = 0; d < 2; d++)
		if (x->child[d] && before(x->child[d]->min_vruntime, m))
			m = x->child[d]->min_vruntime;
	x->min_vruntime = m;
}

static inline int replace_child(struct tree *t, struct node *parent, struct node *old, struct node *new)
{
	int dir;
	if (!parent) {
		t->root = new;
		return LEFT;
	}
	dir = parent->child[LEFT] != old;
	parent->child[dir] = new;
	return dir;
}

static inline struct node *rotate(struct tree *t, struct node *x, int dir, int aug)
{
	uintptr_t xpc = x->parent_color;
	struct node *y = x->child[1 - dir], *inner = y->child[dir];
	x->child[1 - dir] = inner;
	if (inner)
		set_parent(inner, x);
	y->child[dir] = x;
	set_parent(x, y);
	set_parent(y, parent_of(xpc));
	replace_child(t, parent_of(xpc), x, y);
	if (aug) {
		y->min_vruntime = x->min_vruntime;
		recompute(x);
	}
	return y;
}

static inline __attribute__((always_inline)) void insert(struct tree *t, struct node *z, uint64_t key, uint64_t vruntime, int aug)
{
	struct node *parent = 0, *at = t->root, *grand, *uncle;
	int dir = LEFT, side;
	while (at) {
		parent = at;
		dir = !before(key, at->key);
		at = at->child[dir];
	}
	z->child[LEFT] = z->child[RIGHT] = 0;
	z->parent_color = (uintptr_t)parent;
	z->key = key;
	z->vruntime = z->min_vruntime = vruntime;
	if (!parent) {
		t->root = t->leftmost = z;
		set_black(z);
		return;
	}
	parent->child[dir] = z;
	if (parent == t->leftmost && dir == LEFT)
		t->leftmost = z;
	if (aug)
		for (at = parent; at && before(vruntime, at->min_vruntime); at = parent_of(at->parent_color))
			at->min_vruntime = vruntime;
	for (;;) {
		uintptr_t ppc = parent->parent_color;
		if (ppc & BLACK)
			return;
		grand = parent_of(ppc);
		side = grand->child[LEFT] != parent;
		uncle = grand->child[1 - side];
		if (is_red(uncle)) {
			struct node *great = parent_of(grand->parent_color);
			set_black(uncle);
			set_black(parent);
			if (!great)
				return;
			set_red(grand);
			z = grand;
			parent = great;
			continue;
		}
		if (parent->child[1 - side] == z) {
			rotate(t, parent, side, aug);
			parent = z;
		}
		rotate(t, grand, 1 - side, aug);
		set_black(parent);
		set_red(grand);
		return;
	}
}

static inline struct node *leftmost_below(struct node *at)
{
	while (at->child[LEFT])
		at = at->child[LEFT];
	return at;
}

static inline __attribute__((always_inline)) void erase(struct tree *t, struct node *z, int aug)
{
	struct node *left = z->child[LEFT], *right = z->child[RIGHT];
	uintptr_t zpc = z->parent_color;
	struct node *zp = parent_of(zpc), *rebalance, *changed, *moved = 0, *node, *parent, *sibling, *near, *far;
	int side;
	if (t->leftmost == z) {
		/* No left child, its parent's left child; a right child is a red leaf. */
		if (zp)
			zp->child[LEFT] = right;
		else
			t->root = right;
		if (right) {
			right->parent_color = zpc;
			t->leftmost = right;
			rebalance = 0;
		} else {
			t->leftmost = zp;
			rebalance = (zpc & BLACK) ? zp : 0;
		}
		side = LEFT;
		changed = zp;
	} else if (!left || !right) {
		struct node *child = left ? left : right;
		side = replace_child(t, zp, z, child);
		if (child) {
			child->parent_color = zpc;
			rebalance = 0;
		} else {
			rebalance = (zpc & BLACK) ? zp : 0;
		}
		changed = zp;
	} else {
		struct node *s = leftmost_below(right), *hole, *sr = s->child[RIGHT];
		uintptr_t spc = s->parent_color;
		if (s == right) {
			hole = s;
			side = RIGHT;
		} else {
			hole = parent_of(spc);
			side = LEFT;
			hole->child[LEFT] = sr;
			s->child[RIGHT] = right;
			set_parent(right, s);
		}
		s->child[LEFT] = left;
		set_parent(left, s);
		s->parent_color = zpc;
		replace_child(t, zp, z, s);
		if (sr) {
			sr->parent_color = (uintptr_t)hole | BLACK;
			rebalance = 0;
		} else {
			rebalance = (spc & BLACK) ? hole : 0;
		}
		changed = hole;
		moved = s;
	}
	if (aug) {
		for (struct node *at = changed; at; at = parent_of(at->parent_color)) {
			uint64_t old = at->min_vruntime;
			recompute(at);
			if (at == moved)
				moved = 0;
			else if (!moved && at->min_vruntime == old)
				break;
		}
	}
	if (!rebalance)
		return;
	parent = rebalance;
	for (;;) {
		sibling = parent->child[1 - side];
		if (is_red(sibling)) {
			rotate(t, parent, side, aug);
			set_black(sibling);
			set_red(parent);
			sibling = parent->child[1 - side];
		}
		near = sibling->child[side];
		far = sibling->child[1 - side];
		if (!is_red(far)) {
			if (!is_red(near)) {
				uintptr_t ppc = parent->parent_color;
				set_red(sibling);
				if (!(ppc & BLACK)) {
					set_black(parent);
					return;
				}
				node = parent;
				parent = parent_of(ppc);
				if (!parent)
					return;
				side = parent->child[LEFT] != node;
				continue;
			}
			rotate(t, sibling, 1 - side, aug);
			sibling = near;
		}
		far = sibling->child[1 - side];
		{
			uintptr_t parent_black = parent->parent_color & BLACK;
			rotate(t, parent, side, aug);
			sibling->parent_color = (sibling->parent_color & ~BLACK) | parent_black;
			set_black(parent);
			set_black(far);
		}
		return;
	}
}

static struct node *first_eligible(struct tree *t, uint64_t limit)
{
	struct node *a = t->leftmost;
	if (a && a->vruntime <= limit)
		return a;
	for (a = t->root; a;) {
		if (a->child[LEFT] && a->child[LEFT]->min_vruntime <= limit) {
			a = a->child[LEFT];
			continue;
		}
		if (a->vruntime <= limit)
			return a;
		a = a->child[RIGHT];
	}
	return 0;
}

/* The workload: as in timeline_workload.rs. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#define MAX_N 10000
static struct node nodes[MAX_N];
static uint64_t vr[MAX_N], slice[MAX_N], sum, count;
static struct tree tree;

__attribute__((noinline)) void measured_loop_cfs(uint64_t ops)
{
	for (uint64_t i = 0; i < ops; i++) {
		struct node *z = tree.leftmost;
		size_t id = z - nodes;
		erase(&tree, z, 0);
		uint64_t v = vr[id] + slice[id];
		vr[id] = v;
		insert(&tree, z, v, v, 0);
	}
}

__attribute__((noinline)) void measured_loop_eevdf(uint64_t ops)
{
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t limit = sum / count;
		struct node *z = first_eligible(&tree, limit);
		size_t id = z - nodes;
		erase(&tree, z, 1);
		uint64_t s = slice[id], v = vr[id] + s;
		vr[id] = v;
		sum += s;
		insert(&tree, z, v + s, v, 1);
	}
}

/* Builds the tree of n entities; returns the id of the leftmost. */
size_t setup(int augmented, size_t n)
{
	uint64_t state = 0x9E3779B97F4A7C15ull;
	tree.root = tree.leftmost = 0;
	sum = 0;
	count = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = next_random(&state) % 3000000;
		uint64_t s = 700000 + next_random(&state) % 2000000;
		vr[i] = v;
		slice[i] = s;
		sum += v;
		if (augmented)
			insert(&tree, &nodes[i], v + s, v, 1);
		else
			insert(&tree, &nodes[i], v, v, 0);
	}
	return tree.leftmost - nodes;
}

size_t leftmost_id(void) { return tree.leftmost - nodes; }

#ifndef FREESTANDING
int main(int argc, char **argv)
{
	int augmented = argc > 1 && !strcmp(argv[1], "eevdf");
	size_t n = argc > 2 ? strtoul(argv[2], 0, 10) : 1024;
	uint64_t ops = argc > 3 ? strtoull(argv[3], 0, 10) : 100000;
	if (n > MAX_N)
		return 2;
	setup(augmented, n);
	if (augmented)
		measured_loop_eevdf(ops);
	else
		measured_loop_cfs(ops);
	printf("tree=%s n=%zu ops=%llu leftmost=%zu\n", augmented ? "eevdf" : "cfs", n,
	       (unsigned long long)ops, leftmost_id());
	return 0;
}
#endif
