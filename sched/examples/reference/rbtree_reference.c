/*
 * Calibration for timeline_bench.rs: the same workload on a textbook (CLRS)
 * intrusive red-black tree in C with raw pointers, parent links, a black
 * sentinel and a cached leftmost node, optionally augmented with the subtree
 * minimum vruntime. Written from the textbook algorithm; it is not Linux code.
 *
 *   gcc -O2 -o /tmp/rbtree_reference sched/examples/reference/rbtree_reference.c
 *   valgrind --tool=callgrind --toggle-collect='measured_loop*' /tmp/rbtree_reference cfs 8 100000
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right, *parent;
	int red;
	uint64_t key, vruntime, min_vruntime;
};

static struct node nil_node;
#define NIL (&nil_node)

struct tree {
	struct node *root, *leftmost;
	int augmented;
};

static int before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }

static void recompute(struct node *x)
{
	uint64_t m = x->vruntime;
	if (x->left != NIL && before(x->left->min_vruntime, m)) m = x->left->min_vruntime;
	if (x->right != NIL && before(x->right->min_vruntime, m)) m = x->right->min_vruntime;
	x->min_vruntime = m;
}

static void replace_child(struct tree *t, struct node *p, struct node *old, struct node *new)
{
	if (p == NIL) t->root = new;
	else if (p->left == old) p->left = new;
	else p->right = new;
}

static void rotate_left(struct tree *t, struct node *x)
{
	struct node *y = x->right;
	x->right = y->left;
	y->left->parent = x;
	y->parent = x->parent;
	replace_child(t, x->parent, x, y);
	y->left = x;
	x->parent = y;
	if (t->augmented) { y->min_vruntime = x->min_vruntime; recompute(x); }
}

static void rotate_right(struct tree *t, struct node *x)
{
	struct node *y = x->left;
	x->left = y->right;
	y->right->parent = x;
	y->parent = x->parent;
	replace_child(t, x->parent, x, y);
	y->right = x;
	x->parent = y;
	if (t->augmented) { y->min_vruntime = x->min_vruntime; recompute(x); }
}

static void insert(struct tree *t, struct node *z, uint64_t key, uint64_t vruntime)
{
	struct node *p = NIL, *c = t->root;
	int left = 0;
	int leftmost = t->leftmost == NIL || before(key, t->leftmost->key);
	while (c != NIL) {
		p = c;
		left = before(key, c->key);
		c = left ? c->left : c->right;
	}
	z->left = z->right = NIL; z->parent = p; z->red = 1;
	z->key = key; z->vruntime = vruntime; z->min_vruntime = vruntime;
	if (p == NIL) t->root = z; else if (left) p->left = z; else p->right = z;
	if (leftmost) t->leftmost = z;
	if (t->augmented)
		for (c = p; c != NIL && before(vruntime, c->min_vruntime); c = c->parent)
			c->min_vruntime = vruntime;
	while (z->parent->red) {
		struct node *g = z->parent->parent;
		if (z->parent == g->left) {
			struct node *u = g->right;
			if (u->red) { z->parent->red = 0; u->red = 0; g->red = 1; z = g; continue; }
			if (z == z->parent->right) { z = z->parent; rotate_left(t, z); }
			z->parent->red = 0; g->red = 1; rotate_right(t, g);
		} else {
			struct node *u = g->left;
			if (u->red) { z->parent->red = 0; u->red = 0; g->red = 1; z = g; continue; }
			if (z == z->parent->left) { z = z->parent; rotate_right(t, z); }
			z->parent->red = 0; g->red = 1; rotate_left(t, g);
		}
		break;
	}
	t->root->red = 0;
}

static void erase(struct tree *t, struct node *z)
{
	struct node *x, *y = z, *replacement = NIL;
	int removed_red = z->red;
	if (t->leftmost == z) {
		if (z->right != NIL) { struct node *a = z->right; while (a->left != NIL) a = a->left; t->leftmost = a; }
		else t->leftmost = z->parent;
	}
	if (z->left == NIL || z->right == NIL) {
		x = z->left == NIL ? z->right : z->left;
		replace_child(t, z->parent, z, x);
		x->parent = z->parent;
	} else {
		y = z->right;
		while (y->left != NIL) y = y->left;
		removed_red = y->red;
		x = y->right;
		if (y == z->right) x->parent = y;
		else {
			y->parent->left = x; x->parent = y->parent;
			y->right = z->right; z->right->parent = y;
		}
		replace_child(t, z->parent, z, y);
		y->parent = z->parent; y->left = z->left; y->red = z->red; z->left->parent = y;
		replacement = y;
	}
	if (t->augmented) {
		for (struct node *a = x->parent; a != NIL; a = a->parent) {
			uint64_t old = a->min_vruntime;
			recompute(a);
			if (a == replacement) replacement = NIL;
			else if (replacement == NIL && a->min_vruntime == old) break;
		}
	}
	if (removed_red) return;
	while (x != t->root && !x->red) {
		struct node *p = x->parent, *w;
		if (x == p->left) {
			w = p->right;
			if (w->red) { w->red = 0; p->red = 1; rotate_left(t, p); w = p->right; }
			if (!w->left->red && !w->right->red) { w->red = 1; x = p; }
			else {
				if (!w->right->red) { w->left->red = 0; w->red = 1; rotate_right(t, w); w = p->right; }
				w->red = p->red; p->red = 0; w->right->red = 0; rotate_left(t, p); x = t->root;
			}
		} else {
			w = p->left;
			if (w->red) { w->red = 0; p->red = 1; rotate_right(t, p); w = p->left; }
			if (!w->left->red && !w->right->red) { w->red = 1; x = p; }
			else {
				if (!w->left->red) { w->right->red = 0; w->red = 1; rotate_left(t, w); w = p->left; }
				w->red = p->red; p->red = 0; w->left->red = 0; rotate_right(t, p); x = t->root;
			}
		}
	}
	x->red = 0;
}

static struct node *first_eligible(struct tree *t, unsigned __int128 sum, unsigned __int128 count)
{
	struct node *a = t->leftmost;
	if (a != NIL && (unsigned __int128)a->vruntime * count <= sum) return a;
	for (a = t->root; a != NIL;) {
		if (a->left != NIL && (unsigned __int128)a->left->min_vruntime * count <= sum) { a = a->left; continue; }
		if ((unsigned __int128)a->vruntime * count <= sum) return a;
		a = a->right;
	}
	return NIL;
}

static uint64_t next_random(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

static struct node *nodes;
static uint64_t *vr, *slice;
static unsigned __int128 sum;

__attribute__((noinline)) void measured_loop_cfs(struct tree *t, uint64_t ops)
{
	for (uint64_t i = 0; i < ops; i++) {
		struct node *z = t->leftmost;
		size_t id = z - nodes;
		erase(t, z);
		uint64_t v = vr[id] + slice[id];
		vr[id] = v;
		insert(t, z, v, v);
	}
}

__attribute__((noinline)) void measured_loop_eevdf(struct tree *t, uint64_t ops, size_t n)
{
	for (uint64_t i = 0; i < ops; i++) {
		struct node *z = first_eligible(t, sum, n);
		size_t id = z - nodes;
		erase(t, z);
		uint64_t s = slice[id], v = vr[id] + s;
		vr[id] = v;
		sum += s;
		insert(t, z, v + s, v);
	}
}

int main(int argc, char **argv)
{
	int augmented = argc > 1 && !strcmp(argv[1], "eevdf");
	size_t n = argc > 2 ? strtoul(argv[2], 0, 10) : 1024;
	uint64_t ops = argc > 3 ? strtoull(argv[3], 0, 10) : 100000, state = 0x9E3779B97F4A7C15ull;
	struct tree t = { NIL, NIL, augmented };
	nodes = calloc(n, sizeof *nodes); vr = calloc(n, 8); slice = calloc(n, 8);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = next_random(&state) % 3000000, s = 700000 + next_random(&state) % 2000000;
		vr[i] = v; slice[i] = s; sum += v;
		insert(&t, &nodes[i], augmented ? v + s : v, v);
	}
	if (augmented) measured_loop_eevdf(&t, ops, n); else measured_loop_cfs(&t, ops);
	printf("%s n=%zu leftmost %zu\n", argv[1], n, (size_t)(t.leftmost - nodes));
	return 0;
}
