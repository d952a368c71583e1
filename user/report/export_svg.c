/* SPDX-License-Identifier: BSD-2-Clause */
/* An interactive flame graph as one self-contained SVG file: hover, click to zoom, search. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "common/hmap.h"
#include "util/text.h"
#include "common/vec.h"

#define WIDTH 1200
#define XPAD 10
#define FRAME_H 16
#define TOP 58			/* title, subtitle and buttons */
#define BOTTOM 34		/* the details line */
#define FONT_SIZE 12
#define CHAR_W 7.2		/* monospace at 12px: 0.6 em */
#define STR(x) #x
#define XSTR(x) STR(x)

/*
 * The script: frames are <g class="f"> with fg:x and fg:w (in samples) and
 * fg:d (depth, the root "all" at 0); their <title> is "NAME (N samples, P%)".
 */
static const char *const script[] = {
	"var svg, frames, details, matchedtxt, unzoombtn, total, minw, charw = " XSTR(CHAR_W) ";\n",
	"var W = " XSTR(WIDTH) ", XPAD = " XSTR(XPAD) ", FH = " XSTR(FRAME_H) ";\n",
	"var zoomed = null, searching = null;\n",
	"function init(evt) {\n",
	"  svg = document.documentElement;\n",
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n",
	"  details = document.getElementById('details').firstChild;\n",
	"  matchedtxt = document.getElementById('matched');\n",
	"  unzoombtn = document.getElementById('unzoom');\n",
	"  total = +svg.getAttribute('fg:total'); minw = +svg.getAttribute('fg:minwidth');\n",
	"  frames.forEach(function (g) {\n",
	"    g.fx = +g.getAttribute('fg:x'); g.fw = +g.getAttribute('fg:w');\n",
	"    g.fd = +g.getAttribute('fg:d');\n",
	"    g.ffill = g.querySelector('rect').getAttribute('fill');\n",
	"    g.ftitle = g.querySelector('title').textContent;\n",
	"    g.fname = g.ftitle.replace(/ \\([^()]*\\)$/, '');\n",
	"    g.addEventListener('mouseover', function () { details.nodeValue = g.ftitle; });\n",
	"    g.addEventListener('mouseout', function () { details.nodeValue = ' '; });\n",
	"    g.addEventListener('click', function () { zoom(g); });\n",
	"  });\n",
	"  unzoombtn.addEventListener('click', function () { unzoom(); });\n",
	"  document.getElementById('search').addEventListener('click', function () {\n",
	"    search_prompt();\n",
	"  });\n",
	"  matchedtxt.addEventListener('click', function () { reset_search(); });\n",
	"  window.addEventListener('keydown', function (e) {\n",
	"    if ((e.ctrlKey && e.keyCode === 70) || e.keyCode === 114) {\n",
	"      e.preventDefault();\n",
	"      search_prompt();\n",
	"    } else if (e.keyCode === 27) {\n",
	"      reset_search();\n",
	"      unzoom();\n",
	"    }\n",
	"  });\n",
	"  layout(0, total, 0);\n",
	"}\n",
	"/* the name, cut to the frame's width; frames too narrow for one come without <text> */\n",
	"function fit(g, x, w) {\n",
	"  var t = g.querySelector('text'), n = Math.floor((w - 6) / charw), s = g.fname;\n",
	"  if (n < 3) s = ''; else if (s.length > n) s = s.substring(0, n - 2) + '..';\n",
	"  if (!t) {\n",
	"    if (!s) return;\n",
	"    t = document.createElementNS('http://www.w3.org/2000/svg', 'text');\n",
	"    t.setAttribute('y', +g.querySelector('rect').getAttribute('y') + FH - 4);\n",
	"    g.appendChild(t);\n",
	"  }\n",
	"  t.setAttribute('x', (x + 3).toFixed(2));\n",
	"  t.textContent = s;\n",
	"}\n",
	"function place(g, x, w, cls) {\n",
	"  var r = g.querySelector('rect');\n",
	"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', Math.max(w, 0).toFixed(2));\n",
	"  g.setAttribute('class', cls);\n",
	"  fit(g, x, w);\n",
	"}\n",
	"/* show the samples [x0, x0 + w0) across the width, frames below depth d0 as parents */\n",
	"function layout(x0, w0, d0) {\n",
	"  var scale = (W - 2 * XPAD) / w0;\n",
	"  frames.forEach(function (g) {\n",
	"    if (g.fd < d0) {\n",
	"      if (g.fx <= x0 && g.fx + g.fw >= x0 + w0) place(g, XPAD, W - 2 * XPAD, 'f parent');\n",
	"      else g.setAttribute('class', 'f hide');\n",
	"    } else if (g.fx >= x0 && g.fx + g.fw <= x0 + w0 && g.fw * scale >= minw) {\n",
	"      place(g, XPAD + (g.fx - x0) * scale, g.fw * scale, 'f');\n",
	"    } else {\n",
	"      g.setAttribute('class', 'f hide');\n",
	"    }\n",
	"  });\n",
	"  if (searching) search(searching);\n",
	"}\n",
	"function zoom(g) {\n",
	"  zoomed = g;\n",
	"  unzoombtn.setAttribute('class', 'button');\n",
	"  layout(g.fx, g.fw, g.fd);\n",
	"}\n",
	"function unzoom() {\n",
	"  zoomed = null;\n",
	"  unzoombtn.setAttribute('class', 'button hide');\n",
	"  layout(0, total, 0);\n",
	"}\n",
	"function search_prompt() {\n",
	"  var term = prompt('Search for a function (regular expression)',\n",
	"                    searching ? searching.source : '');\n",
	"  if (term === null) return;\n",
	"  if (term === '') { reset_search(); return; }\n",
	"  try { search(new RegExp(term)); }\n",
	"  catch (e) { alert('Not a regular expression: ' + e.message); }\n",
	"}\n",
	"function reset_search() {\n",
	"  searching = null;\n",
	"  frames.forEach(function (g) { g.querySelector('rect').setAttribute('fill', g.ffill); });\n",
	"  matchedtxt.firstChild.nodeValue = ' ';\n",
	"  document.getElementById('search').setAttribute('class', 'button');\n",
	"}\n",
	"/* highlight matches; the matched share counts each sample once, nested matches too */\n",
	"function search(re) {\n",
	"  var ranges = [], sum = 0, end = -1;\n",
	"  var x0 = zoomed ? zoomed.fx : 0, w0 = zoomed ? zoomed.fw : total;\n",
	"  searching = re;\n",
	"  frames.forEach(function (g) {\n",
	"    var r = g.querySelector('rect'), hit = re.test(g.fname);\n",
	"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : g.ffill);\n",
	"    if (hit && g.fx >= x0 && g.fx + g.fw <= x0 + w0) ranges.push([g.fx, g.fx + g.fw]);\n",
	"  });\n",
	"  ranges.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n",
	"  ranges.forEach(function (r) {\n",
	"    if (r[0] >= end) { sum += r[1] - r[0]; end = r[1]; }\n",
	"    else if (r[1] > end) { sum += r[1] - end; end = r[1]; }\n",
	"  });\n",
	"  matchedtxt.firstChild.nodeValue = 'Matched: ' + (100 * sum / w0).toFixed(2) + '%';\n",
	"  document.getElementById('search').setAttribute('class', 'button active');\n",
	"}\n",
};

static const char style[] =
	"text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#subtitle { fill: rgb(90,90,90); text-anchor: middle; }\n"
	"#matched { text-anchor: end; }\n"
	".button { cursor: pointer; fill: rgb(0,0,160); text-decoration: underline; }\n"
	".button.active { fill: rgb(200,0,200); }\n"
	".hide { display: none; }\n"
	"g.f { cursor: pointer; }\n"
	"g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	"g.f text { pointer-events: none; }\n"
	"g.parent rect { opacity: 0.5; }\n";

struct node {
	uint32_t name;
	uint32_t depth;		/* 0 for "all", 1 for the process */
	uint64_t x, w;		/* in samples */
	double delta;		/* a differential graph's: w less the baseline's scaled count */
};

#define NO_BASE UINT32_MAX

/*
 * The baseline of a differential graph: its folded stacks as a trie of
 * frames (root "all" is node 0), each node with the weight of the samples
 * through it. Names are ids in the drawn profile's table.
 */
struct base {
	struct hmap *children;	/* (parent node, name id) -> node + 1 */
	uint64_t *count;	/* by node */
	size_t nodes, cap;
	double scale;		/* the drawn profile's total over the baseline's */
};

struct flame {
	struct node *nodes;
	size_t count, cap;
	uint32_t max_depth;
	const struct base *base;	/* NULL: not a differential graph */
	double max_delta;		/* the largest |delta|, for the colour scale */
};

static int add_node(struct flame *fl, uint32_t name, uint32_t depth, uint64_t x, uint64_t w,
		    uint32_t base_node)
{
	double delta = 0;

	if (fl->base) {
		delta = (double)w - (base_node == NO_BASE ? 0.0 :
				     fl->base->count[base_node] * fl->base->scale);
		if (delta > fl->max_delta || -delta > fl->max_delta)
			fl->max_delta = delta < 0 ? -delta : delta;
	}
	if (VEC_RESERVE(fl->nodes, fl->cap, fl->count + 1, 1024))
		return -ENOMEM;
	fl->nodes[fl->count++] = (struct node){ name, depth, x, w, delta };
	if (depth > fl->max_depth)
		fl->max_depth = depth;
	return 0;
}

/* The child of baseline node @parent named @name, or NO_BASE. */
static uint32_t base_child(const struct base *b, uint32_t parent, uint32_t name)
{
	uint64_t *v;

	if (!b || parent == NO_BASE || hmap__find_u128(b->children, parent, name, &v))
		return NO_BASE;
	return (uint32_t)(*v - 1);
}

/*
 * Load baseline @s: its folded stacks, names interned into @f's table (ids
 * past f's own, which no frame drawn uses), as a trie. @return 0 or -ENOMEM.
 */
static int base__load(struct base *b, struct folded *f, const struct session *s,
		      bool keep_addresses)
{
	uint32_t *ids = NULL;	/* the baseline's name ids to @f's */
	struct folded old;
	int err;

	memset(b, 0, sizeof(*b));
	if ((err = folded__build(&old, s, keep_addresses)))
		return err;
	err = -ENOMEM;
	if (!(b->children = hmap__new(HMAP_U128)) ||
	    !(ids = calloc(old.names.count + 1, sizeof(*ids))) ||
	    VEC_RESERVE(b->count, b->cap, 1, 1024))
		goto out;
	b->count[0] = old.total;
	b->nodes = 1;
	for (size_t i = 0; i < old.names.count; i++) {
		int64_t id = strtab__intern(&f->names, old.names.strs[i], strlen(old.names.strs[i]));

		if (id < 0)
			goto out;
		ids[i] = (uint32_t)id;
	}
	for (size_t i = 0; i < old.nstacks; i++) {
		const struct folded_stack *st = &old.stacks[i];
		uint32_t node = 0;

		for (uint32_t d = 0; d < st->depth; d++) {
			uint64_t *v;

			if (hmap__entry_u128(b->children, node, ids[st->names[d]], &v))
				goto out;
			if (!*v) {
				if (VEC_RESERVE(b->count, b->cap, b->nodes + 1, 1024))
					goto out;
				b->count[b->nodes] = 0;
				*v = ++b->nodes;
			}
			node = (uint32_t)(*v - 1);
			b->count[node] += st->count;
		}
	}
	/* as difffolded.pl -n: the baseline scaled to the drawn profile's total */
	b->scale = old.total ? (double)f->total / old.total : 0;
	err = 0;
out:
	free(ids);
	folded__release(&old);
	return err;
}

static void base__release(struct base *b)
{
	hmap__free(b->children);
	free(b->count);
}

/*
 * Frames from the sorted folded stacks, as flamegraph.pl merges them: a stack
 * shares the frames of the previous one up to their first difference.
 */
static int build(struct flame *fl, const struct folded *f, uint32_t all, double scale,
		 double min_width)
{
	uint32_t *open_name = NULL, *open_base = NULL, max = 0;
	uint64_t *open_x = NULL, x = 0;
	const struct folded_stack *prev = NULL;
	int err = -ENOMEM;

	for (size_t i = 0; i < f->nstacks; i++)
		if (f->stacks[i].depth > max)
			max = f->stacks[i].depth;
	open_name = calloc(max + 1, sizeof(*open_name));
	open_x = calloc(max + 1, sizeof(*open_x));
	open_base = calloc(max + 1, sizeof(*open_base));
	if (!open_name || !open_x || !open_base)
		goto out;
	for (size_t i = 0; i <= f->nstacks; i++) {
		const struct folded_stack *st = i < f->nstacks ? &f->stacks[i] : NULL;
		uint32_t same = 0, depth = st ? st->depth : 0;

		while (prev && st && same < prev->depth && same < depth &&
		       prev->names[same] == st->names[same])
			same++;
		/* close what this stack does not share, innermost first */
		for (uint32_t d = prev ? prev->depth : 0; d > same; d--)
			if ((x - open_x[d - 1]) * scale >= min_width &&
			    add_node(fl, open_name[d - 1], d, open_x[d - 1], x - open_x[d - 1],
				     open_base[d - 1]))
				goto out;
		for (uint32_t d = same; d < depth; d++) {
			open_name[d] = st->names[d];
			open_x[d] = x;
			open_base[d] = base_child(fl->base, d ? open_base[d - 1] : 0, st->names[d]);
		}
		if (st)
			x += st->count;
		prev = st;
	}
	err = add_node(fl, all, 0, 0, f->total, 0);
out:
	free(open_name);
	free(open_x);
	free(open_base);
	return err;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* flamegraph.pl's palettes: warm for user code, aqua for the kernel, grey for the rest. */
static void color(char *buf, size_t cap, const char *name, enum fold_kind kind, bool all)
{
	uint32_t h = name_hash(name);
	unsigned a = h & 0xff, b = (h >> 8) & 0xff, c = (h >> 16) & 0xff;

	if (all || kind == FOLD_PROCESS || kind == FOLD_OTHER)
		snprintf(buf, cap, "rgb(%u,%u,%u)", 180 + a % 40, 180 + a % 40, 190 + a % 40);
	else if (kind == FOLD_KERNEL)
		snprintf(buf, cap, "rgb(%u,%u,%u)", 50 + a % 60, 165 + b % 55, 165 + c % 55);
	else
		snprintf(buf, cap, "rgb(%u,%u,%u)", 205 + a % 51, b * 230 / 255, c * 55 / 255);
}

/* flamegraph.pl --diff's scale: red where a frame grew, blue where it shrank, white for no change. */
static void color_delta(char *buf, size_t cap, double delta, double max)
{
	unsigned r = 255, g = 255, b = 255;

	if (delta > 0 && max > 0)
		g = b = (unsigned)(210 * (max - delta) / max);
	else if (delta < 0 && max > 0)
		r = g = (unsigned)(210 * (max + delta) / max);
	snprintf(buf, cap, "rgb(%u,%u,%u)", r, g, b);
}

static void put_node(FILE *out, const struct folded *f, const struct flame *fl,
		     const struct node *n, uint32_t all, double scale, unsigned height, bool wall)
{
	const char *name = n->name == all && !n->depth ? "all" : f->names.strs[n->name];
	double x = XPAD + n->x * scale, w = n->w * scale;
	unsigned y = height - BOTTOM - (n->depth + 1) * FRAME_H;
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0, len = text_width(name, TEXT_XML);
	char fill[32];

	char delta[48] = "";

	if (fl->base) {
		/* the change in points of the drawn profile's total, as flamegraph.pl's tooltip */
		double pct = f->total ? 100.0 * n->delta / f->total : 0.0;

		color_delta(fill, sizeof(fill), n->delta, fl->max_delta);
		snprintf(delta, sizeof(delta), "; %s%.2f%%", pct >= 0.005 ? "+" : "",
			 pct > -0.005 && pct < 0.005 ? 0.0 : pct);
	} else {
		color(fill, sizeof(fill), name, n->depth ? f->kinds[n->name] : FOLD_OTHER, !n->depth);
	}
	fprintf(out, "<g class=\"f\" fg:x=\"%" PRIu64 "\" fg:w=\"%" PRIu64 "\" fg:d=\"%u\"",
		n->x, n->w, n->depth);
	if (fl->base)
		fprintf(out, " fg:delta=\"%.3f\"", n->delta);
	fputs("><title>", out);
	/* names as every format shows them, and XML's own escapes */
	text_put(out, name, TEXT_XML);
	/* an imported trace is weighted by ns of wall time, off-CPU samples by ns off it */
	fprintf(out, " (%" PRIu64 " %s%s, %.2f%%%s)</title><rect x=\"%.2f\" y=\"%u\" "
		"width=\"%.2f\" height=\"%u\" fill=\"%s\"/>", n->w, wall ? "ns" : "sample",
		wall || n->w == 1 ? "" : "s", f->total ? 100.0 * n->w / f->total : 0.0, delta, x, y,
		w, FRAME_H - 1, fill);
	/* the script fits names again after each zoom; this is for viewers without it */
	if (fit >= 3) {
		fprintf(out, "<text x=\"%.2f\" y=\"%u\">", x + 3, y + FRAME_H - 4);
		text_put_width(out, name, TEXT_XML, len > fit ? fit - 2 : SIZE_MAX);
		fputs(len > fit ? "..</text>" : "</text>", out);
	}
	fputs("</g>\n", out);
}

int export_svg(const struct session *s, FILE *out, const struct svg_opts *opts)
{
	const struct session_totals *tot = session__totals(s);
	const struct profile_meta *meta = session__meta(s);
	/* one event's samples (pick_event()) */
	const struct session_event *ev = session__nsamples(s) ?
		session__event(s, session__sample(s, 0)->event) : NULL;
	bool offcpu = ev && session__sample(s, 0)->event && (ev->flags & PROFILE_EV_F_WEIGHT_NS);
	bool wall = (meta->flags & PROFILE_F_WALL_NS) || offcpu;
	struct flame fl = { 0 };
	struct base base = { 0 };
	unsigned height;
	struct folded f;
	double scale;
	int err;

	if ((err = folded__build(&f, s, opts->keep_addresses)))
		return err;
	if (opts->base) {
		if ((err = base__load(&base, &f, opts->base, opts->keep_addresses)))
			goto out;
		fl.base = &base;
	}
	scale = f.total ? (double)(WIDTH - 2 * XPAD) / f.total : 0;
	/* "all" is no process name: any id past the names serves to tell it apart */
	if ((err = build(&fl, &f, f.names.count, scale, opts->min_width)))
		goto out;
	height = TOP + (fl.max_depth + 1) * FRAME_H + BOTTOM;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:fg=\"https://github.com/sfprof/sfprof/flamegraph\" "
		"fg:total=\"%" PRIu64 "\" fg:minwidth=\"%g\" onload=\"init(evt)\">\n", WIDTH, height,
		WIDTH, height, f.total, opts->min_width);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", style);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
	/* in pieces: one literal would pass the 4095 characters C99 promises */
	for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++)
		fputs(script[i], out);
	fputs("]]></script>\n", out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(248,248,248)\"/>\n",
		WIDTH, height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"22\">", WIDTH / 2);
	text_put(out, opts->title, TEXT_XML);
	if (wall)
		fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\">%.6f s %s "
			"in %" PRIu64 " samples, widths in ns; root at the bottom; click a frame "
			"to zoom, Ctrl-F to search</text>\n", WIDTH / 2, f.total / 1e9,
			offcpu ? "off the CPU" : "of wall time", tot->samples);
	else if (tot->lost_unknown)
		fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\">%" PRIu64
			" samples, lost unknown (damaged count), %u Hz; root at the bottom; click a "
			"frame to zoom, Ctrl-F to search</text>\n", WIDTH / 2, tot->samples,
			meta->freq_hz);
	else if (fl.base)
		fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\">differential: "
			"widths of these %" PRIu64 " samples, red grew and blue shrank against the "
			"baseline's %" PRIu64 " (scaled to this total); click to zoom, Ctrl-F to "
			"search</text>\n", WIDTH / 2, tot->samples, session__totals(opts->base)->samples);
	else
		fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\">%" PRIu64
			" samples, %" PRIu64 " lost, %u Hz; root at the bottom; click a frame to zoom, "
			"Ctrl-F to search</text>\n", WIDTH / 2, tot->samples, tot->lost,
			meta->freq_hz);
	fprintf(out, "<text id=\"unzoom\" class=\"button hide\" x=\"%u\" y=\"22\">Reset Zoom</text>\n",
		XPAD);
	fprintf(out, "<text id=\"search\" class=\"button\" x=\"%u\" y=\"22\">Search</text>\n",
		WIDTH - XPAD - 60);
	fprintf(out, "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n", XPAD, height - 12);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n", WIDTH - XPAD,
		height - 12);
	fputs("<g id=\"frames\">\n", out);
	/* the root first, so that it is drawn under nothing and found first */
	for (size_t i = fl.count; i-- > 0;)
		put_node(out, &f, &fl, &fl.nodes[i], f.names.count, scale, height, wall);
	fputs("</g>\n</svg>\n", out);
	err = export_stream_error(out);
out:
	free(fl.nodes);
	base__release(&base);
	folded__release(&f);
	return err;
}
