/* SPDX-License-Identifier: BSD-2-Clause */
/* Call-graph trees of report -g: chains of frames merged by function, printed as perf report --stdio. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_tree.h"
#include "common/hmap.h"
#include "common/vec.h"

#define NONE UINT32_MAX

struct rnode {
	uint64_t key;
	uint64_t self;		/* weight of the chains that end here */
	uint64_t cum;		/* weight of the chains through here, self included */
	uint32_t parent, first_child, next_sibling, nchildren;
};

struct rtree {
	struct rnode *nodes;
	size_t nnodes, cap;
	struct hmap *children;	/* (parent, key) -> node + 1 */
};

struct rtree *rtree__new(void)
{
	struct rtree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->children = hmap__new(HMAP_U128);
	if (!t->children) {
		free(t);
		return NULL;
	}
	return t;
}

void rtree__free(struct rtree *t)
{
	if (!t)
		return;
	hmap__free(t->children);
	free(t->nodes);
	free(t);
}

static int new_node(struct rtree *t, uint32_t parent, uint64_t key, uint32_t *out)
{
	struct rnode *n;

	if (t->nnodes >= NONE - 1 || VEC_RESERVE(t->nodes, t->cap, t->nnodes + 1, 256))
		return -ENOMEM;
	n = &t->nodes[t->nnodes];
	*n = (struct rnode){ .key = key, .parent = parent, .first_child = NONE,
			     .next_sibling = NONE };
	if (parent != NONE) {
		struct rnode *p = &t->nodes[parent];

		n->next_sibling = p->first_child;
		p->first_child = t->nnodes;
		p->nchildren++;
	}
	*out = t->nnodes++;
	return 0;
}

int rtree__root(struct rtree *t, uint32_t *root)
{
	return new_node(t, NONE, 0, root);
}

int rtree__add(struct rtree *t, uint32_t root, const uint64_t *keys, size_t n, uint64_t weight)
{
	uint32_t node = root;

	t->nodes[root].cum += weight;
	for (size_t i = 0; i < n; i++) {
		uint64_t *idx;
		int err;

		if (hmap__entry_u128(t->children, node, keys[i], &idx))
			return -ENOMEM;
		if (!*idx) {
			uint32_t child;

			if ((err = new_node(t, node, keys[i], &child))) {
				hmap__delete_u128(t->children, node, keys[i], NULL);
				return err;
			}
			*idx = (uint64_t)child + 1;
		}
		node = (uint32_t)(*idx - 1);
		t->nodes[node].cum += weight;
	}
	t->nodes[node].self += weight;
	return 0;
}

/*
 * perf keeps its chains in a radix tree: a run of entries where nothing
 * branches off and no chain ends is one node. Runs are found here from the
 * plain tree: a node with one child and no chain ending in it goes on.
 */
static uint32_t run_end(const struct rtree *t, uint32_t node)
{
	while (t->nodes[node].nchildren == 1 && !t->nodes[node].self)
		node = t->nodes[node].first_child;
	return node;
}

struct printer {
	struct rtree *t;
	FILE *out;
	const struct rtree_print *p;
	uint64_t min_abs;	/* graph and flat: branches below this are left out */
	uint8_t *mask;		/* per depth: a pipe goes on down */
	size_t mask_cap;
	uint32_t *path;		/* flat and folded: the run ends from the root */
	size_t path_cap;
	size_t lines;		/* printed so far */
};

static int cmp_cum(const void *pa, const void *pb, void *arg)
{
	const struct printer *pr = arg;
	const struct rnode *a = &pr->t->nodes[*(const uint32_t *)pa];
	const struct rnode *b = &pr->t->nodes[*(const uint32_t *)pb];

	if (a->cum != b->cum)
		return a->cum > b->cum ? -1 : 1;
	return strcmp(pr->p->name(a->key, pr->p->arg), pr->p->name(b->key, pr->p->arg)) < 0 ? -1 : 1;
}

/*
 * The children of @node shown, biggest first: those at or above the
 * threshold, of the whole (graph: perf's min hit of the report's total) or
 * of @node's children (fractal, rounded up as perf does). @return the
 * count, or -ENOMEM; *@out to free().
 */
static int shown_children(struct printer *pr, uint32_t node, uint32_t **out)
{
	const struct rnode *n = &pr->t->nodes[node];
	uint64_t min = pr->min_abs;
	uint32_t *kids, count = 0;

	*out = NULL;
	if (!n->nchildren)
		return 0;
	if (pr->p->mode == RTREE_FRACTAL) {
		/* rounded up, as perf's ceil() */
		double x = (double)(n->cum - n->self) * pr->p->threshold / 100.0;

		min = (uint64_t)x;
		if ((double)min < x)
			min++;
	}
	kids = malloc(n->nchildren * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	for (uint32_t c = n->first_child; c != NONE; c = pr->t->nodes[c].next_sibling)
		if (pr->t->nodes[c].cum >= min)
			kids[count++] = c;
	if (count > 1)
		qsort_r(kids, count, sizeof(*kids), cmp_cum, pr);
	*out = kids;
	return (int)count;
}

static void margin(struct printer *pr, int left)
{
	pr->lines++;
	fprintf(pr->out, "            %*s", left, "");
}

static void value(struct printer *pr, uint64_t weight, uint64_t total)
{
	fprintf(pr->out, "%.2f%%", total ? weight * 100.0 / total : 0.0);
}

static void graph_line(struct printer *pr, int depth, const uint8_t *mask, int left)
{
	margin(pr, left);
	for (int i = 0; i < depth; i++)
		fputs(mask[i] ? "|          " : "           ", pr->out);
	fputc('\n', pr->out);
}

/* One entry of a run: the first with its share between dashes. */
static void entry_line(struct printer *pr, uint64_t weight, const char *name, int depth,
		       int period, uint64_t total, int left)
{
	margin(pr, left);
	for (int i = 0; i < depth; i++) {
		fputc(pr->mask[i] ? '|' : ' ', pr->out);
		if (!period && i == depth - 1) {
			fputs("--", pr->out);
			value(pr, weight, total);
			fputs("--", pr->out);
		} else {
			fputs("          ", pr->out);
		}
	}
	fputs(name, pr->out);
	fputc('\n', pr->out);
}

static int reserve_mask(struct printer *pr, size_t depth)
{
	if (depth + 1 <= pr->mask_cap)
		return 0;
	return VEC_RESERVE(pr->mask, pr->mask_cap, depth + 1, 64);
}

/* perf's __callchain__fprintf_graph(), with @pr->mask[0..depth) its depth mask. */
static int print_graph(struct printer *pr, const uint32_t *kids, int nkids, uint64_t total,
		       int depth, int left)
{
	bool rel = pr->p->mode == RTREE_FRACTAL;
	uint64_t remaining = total;
	uint8_t old;
	int err = 0;

	if (reserve_mask(pr, depth + 1))
		return -ENOMEM;
	old = pr->mask[depth - 1];
	for (int k = 0; k < nkids && !err; k++) {
		uint32_t first = kids[k], end = run_end(pr->t, first), *sub;
		const struct rnode *e = &pr->t->nodes[end];
		uint64_t cum = pr->t->nodes[first].cum;
		int period = 0, nsub;

		remaining -= cum;
		/* the mask of the line between siblings keeps the pipe of this level */
		pr->mask[depth - 1] = old;
		graph_line(pr, depth, pr->mask, left);
		if (k + 1 == nkids && (!rel || !remaining))
			old = 0;
		pr->mask[depth - 1] = old;
		for (uint32_t n = first;; n = pr->t->nodes[n].first_child) {
			entry_line(pr, cum, pr->p->name(pr->t->nodes[n].key, pr->p->arg), depth,
				   period++, total, left);
			if (n == end)
				break;
		}
		if ((nsub = shown_children(pr, end, &sub)) < 0)
			return nsub;
		pr->mask[depth] = 1;
		err = print_graph(pr, sub, nsub, rel ? e->cum - e->self : total, depth + 1, left);
		free(sub);
		pr->mask[depth - 1] = old;
	}
	if (!err && rel && remaining && remaining != total) {
		pr->mask[depth - 1] = 0;
		entry_line(pr, remaining, "[...]", depth, 0, total, left);
	}
	return err;
}

/* perf's callchain__fprintf_graph(): a single chain of the row's whole weight without a share. */
static int print_tree(struct printer *pr, uint32_t root)
{
	uint64_t total = pr->p->total;
	uint32_t *kids, node = root;
	bool printed = false;
	int left = 0, nkids, err;

	if ((nkids = shown_children(pr, root, &kids)) < 0)
		return nkids;
	if (nkids == 1 && pr->t->nodes[kids[0]].cum == pr->p->parent) {
		uint32_t end = run_end(pr->t, kids[0]);
		int i = 0;

		for (uint32_t n = kids[0];; n = pr->t->nodes[n].first_child) {
			if (!(i++ == 0 && pr->p->skip_first)) {
				if (!printed) {
					margin(pr, left);
					fputs("|\n", pr->out);
					margin(pr, left);
					fputs("---", pr->out);
					left += 3;
					printed = true;
				} else {
					margin(pr, left);
				}
				fputs(pr->p->name(pr->t->nodes[n].key, pr->p->arg), pr->out);
				fputc('\n', pr->out);
			}
			if (n == end)
				break;
		}
		node = end;
		free(kids);
		if ((nkids = shown_children(pr, node, &kids)) < 0)
			return nkids;
	}
	if (pr->p->mode == RTREE_FRACTAL)
		total = pr->p->parent;
	if (reserve_mask(pr, 1)) {
		free(kids);
		return -ENOMEM;
	}
	pr->mask[0] = 1;
	err = print_graph(pr, kids, nkids, total, 1, left);
	free(kids);
	/* no blank line after a tree that printed nothing */
	if (!err && pr->lines)
		fputc('\n', pr->out);
	return err;
}

struct flat_entry {
	uint32_t node;
	uint64_t self;
};

static int cmp_flat(const void *pa, const void *pb)
{
	const struct flat_entry *a = pa, *b = pb;

	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

/* Where chains end, at or above the threshold of the whole, as perf's sort_chain_flat(). */
static int flat_entries(struct printer *pr, uint32_t root, struct flat_entry **out, size_t *n)
{
	struct flat_entry *v = NULL;
	size_t count = 0, cap = 0;
	uint32_t *stack = NULL;
	size_t depth = 0, scap = 0;

	if (VEC_RESERVE(stack, scap, 1, 64))
		return -ENOMEM;
	stack[depth++] = root;
	while (depth) {
		uint32_t node = stack[--depth];
		const struct rnode *nd = &pr->t->nodes[node];

		if (node != root && nd->self && nd->self >= pr->min_abs) {
			if (VEC_RESERVE(v, cap, count + 1, 64))
				goto oom;
			v[count++] = (struct flat_entry){ node, nd->self };
		}
		for (uint32_t c = nd->first_child; c != NONE; c = pr->t->nodes[c].next_sibling) {
			if (VEC_RESERVE(stack, scap, depth + 1, 64))
				goto oom;
			stack[depth++] = c;
		}
	}
	free(stack);
	if (count > 1)
		qsort(v, count, sizeof(*v), cmp_flat);
	*out = v;
	*n = count;
	return 0;
oom:
	free(stack);
	free(v);
	return -ENOMEM;
}

static int print_flat(struct printer *pr, uint32_t root)
{
	struct flat_entry *v;
	size_t n;
	int err;

	if ((err = flat_entries(pr, root, &v, &n)))
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		size_t len = 0;

		for (uint32_t x = v[i].node; x != root; x = pr->t->nodes[x].parent) {
			if (VEC_RESERVE(pr->path, pr->path_cap, len + 1, 64)) {
				err = -ENOMEM;
				break;
			}
			pr->path[len++] = x;
		}
		if (err)
			break;
		if (pr->p->mode == RTREE_FOLDED) {
			/* folded shows the chains' own weight, flat the node's with what goes on */
			value(pr, v[i].self, pr->p->total);
			fputc(' ', pr->out);
			for (size_t j = len; j-- > 0;) {
				fputs(pr->p->name(pr->t->nodes[pr->path[j]].key, pr->p->arg), pr->out);
				if (j)
					fputc(';', pr->out);
			}
			fputc('\n', pr->out);
			continue;
		}
		fputs("           ", pr->out);
		value(pr, pr->t->nodes[v[i].node].cum, pr->p->total);
		fputc('\n', pr->out);
		for (size_t j = len; j-- > 0;)
			fprintf(pr->out, "                %s\n",
				pr->p->name(pr->t->nodes[pr->path[j]].key, pr->p->arg));
		fputc('\n', pr->out);
	}
	free(v);
	return err;
}

int rtree__print(struct rtree *t, uint32_t root, FILE *out, const struct rtree_print *p)
{
	struct printer pr = { .t = t, .out = out, .p = p,
			      .min_abs = (uint64_t)(p->total * (p->threshold / 100.0)) };
	int err;

	if (p->mode == RTREE_FLAT || p->mode == RTREE_FOLDED)
		err = print_flat(&pr, root);
	else
		err = print_tree(&pr, root);
	free(pr.mask);
	free(pr.path);
	return err;
}
