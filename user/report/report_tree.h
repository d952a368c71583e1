/* SPDX-License-Identifier: BSD-2-Clause */
/* Call-graph trees of report -g: chains of frames merged by function, printed as perf report --stdio. */
#ifndef SFPROF_REPORT_TREE_H
#define SFPROF_REPORT_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* perf's print types: graph (percentages of the total), fractal (of the parent), flat, folded. */
enum rtree_mode { RTREE_GRAPH, RTREE_FRACTAL, RTREE_FLAT, RTREE_FOLDED };

struct rtree_print {
	enum rtree_mode mode;
	double threshold;	/* percent: smaller branches are left out */
	bool skip_first;	/* a single chain's first entry is the row's symbol: not shown */
	uint64_t total;		/* what percentages are of (the report's total weight) */
	uint64_t parent;	/* the row's weight: self, or children with --children */
	/* the text of a key: valid until the next call */
	const char *(*name)(uint64_t key, void *arg);
	void *arg;
};

/* A forest: many trees, one per report row, sharing their storage. */
struct rtree;

/** rtree__new() - an empty forest. @return NULL with errno set. */
struct rtree *rtree__new(void);
void rtree__free(struct rtree *t);

/** rtree__root() - a new, empty tree; its id in @root. @return 0 or -ENOMEM. */
int rtree__root(struct rtree *t, uint32_t *root);

/**
 * rtree__add() - add a chain of @n keys (in the order shown: callee or caller
 * first) weighing @weight to tree @root; equal keys at the same place merge.
 * @return 0 or -ENOMEM.
 */
int rtree__add(struct rtree *t, uint32_t root, const uint64_t *keys, size_t n, uint64_t weight);

/**
 * rtree__print() - print tree @root below its row as perf report --stdio
 * prints a hist entry's call chains in @p->mode.
 * @return 0, or -ENOMEM.
 */
int rtree__print(struct rtree *t, uint32_t root, FILE *out, const struct rtree_print *p);

#endif
