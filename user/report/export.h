/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof export: the output formats and what they share: folded stacks, addresses, strings, units. */
#ifndef SFPROF_EXPORT_H
#define SFPROF_EXPORT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "session.h"
#include "strtab.h"

/* --- the formats; each returns 0 or a negative errno (-ENOMEM, -EIO when writing failed) --- */

/** export_markup() - symbolizer markup, one {{{reset}}} stream per process image. */
int export_markup(const struct session *s, FILE *out);

/**
 * export_collapsed() - folded stacks: `comm;outer;...;leaf COUNT` per distinct stack.
 * @keep_addresses: name unnamed code module+0xoffset, one frame per address,
 * instead of [module] (as stackcollapse-perf.pl folds perf script's [unknown]).
 */
int export_collapsed(const struct session *s, FILE *out, bool keep_addresses);

/** export_pprof() - a gzip-compressed profile.proto. */
int export_pprof(const struct session *s, FILE *out);

/*
 * What a sample's values mean, for pprof and OTLP: samples/count, then, when
 * @type is set, @type/@unit as the weight times @mult (a CPU clock's period
 * in ns, the events a -c sample stands for), or as the weight itself when it
 * is in nanoseconds already (off the CPU, an imported trace's wall time).
 */
struct export_units {
	const char *type, *unit;
	uint64_t mult;		/* also the profile's period, in @type's unit */
	bool count;		/* samples/count is the first value */
	bool weight_ns;		/* weights are nanoseconds: samples are counted apart */
};

/** export_units_of() - the units of event @event's samples (0: the header's cpu-clock). */
struct export_units export_units_of(const struct session *s, uint32_t event);

/* What export_pprof_opts() leaves out or sets, for a profile server's ingest (sfprof agent). */
struct pprof_opts {
	/*
	 * User frames as addresses in mappings with build IDs only, no
	 * functions: for servers that symbolize themselves (Parca, through
	 * debuginfod). Kernel frames keep their names: only this host's
	 * kallsyms knows them.
	 */
	bool no_symbolize;
	/* no thread-name label on samples (a server may make each label value a series) */
	bool no_thread_label;
	/* only the samples for which this is true (NULL: every one) */
	bool (*keep)(void *ctx, const struct session *s, size_t sample);
	void *keep_ctx;
	/* the profile's time and duration (0: from its first to its last sample) */
	uint64_t time_ns, duration_ns;
};

/** export_pprof_opts() - export_pprof() of part of a session, as @o says. */
int export_pprof_opts(const struct session *s, FILE *out, const struct pprof_opts *o);

/* One attribute of an OTLP resource: a string, or an integer when str is NULL. */
struct otlp_attr {
	const char *key;
	const char *str;
	int64_t num;
};

/* One ResourceProfiles of a request: its attributes (semantic conventions' names). */
struct otlp_resource {
	const struct otlp_attr *attrs;
	size_t nattrs;
};

struct otlp_opts {
	bool no_symbolize;		/* as pprof_opts: user frames as addresses in mappings with build IDs */
	bool no_thread_label;		/* no thread.name / thread.id attribute on samples */
	/* the resources; 0 of them: one per process of the session (pid, executable, host) */
	const struct otlp_resource *resources;
	size_t nresources;
	/* the resource index of sample @i, or -1 to leave it out (NULL: every sample, resource 0) */
	int (*resource_of)(void *ctx, const struct session *s, size_t sample);
	void *ctx;
	uint64_t time_ns, duration_ns;	/* 0: from the first to the last sample */
};

/** export_otlp_opts() - one ExportProfilesServiceRequest (protobuf, not compressed). @return 0 or -errno. */
int export_otlp_opts(const struct session *s, FILE *out, const struct otlp_opts *o);

/** export_otlp() - the whole session, one resource per process. */
int export_otlp(const struct session *s, FILE *out);

struct svg_opts {
	const char *title;
	double min_width;	/* frames narrower than this many pixels are left out */
	bool keep_addresses;	/* as export_collapsed()'s */
	/*
	 * A differential flame graph against this baseline, as FlameGraph's
	 * difffolded.pl -n and flamegraph.pl: widths from the profile drawn,
	 * the baseline's counts scaled to its total, frames red where they grew,
	 * blue where they shrank, the change in the title. NULL: a plain one.
	 */
	const struct session *base;
};

/** export_svg() - a self-contained interactive flame graph, root at the bottom. */
int export_svg(const struct session *s, FILE *out, const struct svg_opts *opts);

/* --- folded stacks, shared by collapsed and svg --- */

enum fold_kind {
	FOLD_PROCESS,	/* the root: the process name */
	FOLD_USER,	/* a user function, or module+0xoffset */
	FOLD_KERNEL,	/* a kernel function, named with the suffix _[k] */
	FOLD_OTHER,	/* frames left out by the recorder, addresses outside every mapping */
};

struct folded_stack {
	uint32_t *names;	/* ids in folded.names, root first */
	uint32_t depth;
	uint64_t count;		/* sample weight */
};

struct folded {
	struct folded_stack *stacks;	/* distinct, sorted by name, level by level */
	size_t nstacks;
	struct strtab names;		/* as the session has them: escape them to print */
	uint8_t *kinds;			/* enum fold_kind, by name id */
	uint64_t total;			/* the sum of the counts: every sample's weight */
};

/**
 * folded__build() - every sample as process name, user frames outermost
 * first, then kernel frames, innermost last; equal stacks merged. Code no
 * symbol covers is one frame [module] per module unless @keep_addresses.
 * @return 0 or -ENOMEM (@f then holds nothing).
 */
int folded__build(struct folded *f, const struct session *s, bool keep_addresses);

/** folded__release() - free what folded__build() made. */
void folded__release(struct folded *f);

/* --- where an image's mappings put its modules --- */

struct image_layout {
	const struct session *s;
	const struct session_image *im;
	uint64_t *vaddr;	/* per mapping: the module-relative address (ELF vaddr) of its start */
	bool *known;		/* per mapping: vaddr is known (the module's ELF file was read) */
	/*
	 * Module-relative addresses to mappings: the points where a mapping's
	 * range in its module starts or ends, sorted by (module, address); each
	 * starts a segment, up to the next point of the same module, that
	 * belongs to the first mapping whose range holds it (SIZE_MAX: none).
	 */
	struct layout_point *points;
	size_t *owner;
	size_t npoints;
};

struct layout_point {
	uint32_t module;
	uint64_t at;
};

/**
 * image_layout__init() - place the mappings of image @image: each mapping's
 * start as an address in its module's ELF file (sym_module__map_vaddr(), as
 * the session placed the frames). Modules whose file was not found are taken
 * to map file offsets at the same virtual addresses. @return 0 or -ENOMEM.
 */
int image_layout__init(struct image_layout *l, const struct session *s, uint32_t image);

/** image_layout__release() - free what image_layout__init() made; a second call is harmless. */
void image_layout__release(struct image_layout *l);

/**
 * image_layout__frame_addr() - a user frame's address in this image.
 *
 * Frames are shared by the images that map the same module, so a frame's
 * own address is the one of the first image that sampled it: this finds the
 * address in @l's image from the frame's module-relative address.
 * @map: receives the index of the mapping holding it, or SIZE_MAX.
 * @return true when the frame is placed in a mapping of the image.
 */
bool image_layout__frame_addr(const struct image_layout *l, const struct session_frame *f,
			      uint64_t *addr, size_t *map);

/**
 * image_layouts__get() - the layout of image @image in @layouts (one per
 * image of @s, zeroed at first), made on its first use.
 * @return it, or NULL with *@oom set when it cannot be made.
 */
struct image_layout *image_layouts__get(struct image_layout *layouts, const struct session *s,
					uint32_t image, bool *oom);

/* Where a profile with mappings and locations (pprof, OTLP) puts one frame. */
struct frame_place {
	uint64_t addr;	/* the location's address: 0 for a Python frame */
	size_t map;	/* the image's mapping that holds it, or SIZE_MAX (kernel, Python, JIT code) */
	bool named;	/* whether it gets its functions here (else a server names it) */
};

/**
 * frame_place() - where frame @f of an image goes: its address in the image
 * (@l, NULL when the image's layout could not be made), and whether it is
 * named here. It always is, except a user frame in a mapping with
 * @no_symbolize, which a server names by its build ID and address; JIT code
 * has neither and kernel frames are known only here, so both stay named.
 */
void frame_place(const struct image_layout *l, const struct session_frame *f, bool no_symbolize,
		 struct frame_place *out);

/**
 * export_stream_error() - how writing @out went, once the exporter is done.
 * Flushes first, so that a write failing now (a full disk) reports its own
 * errno rather than the stream's sticky error flag alone.
 * @return 0, the flush's negative errno, or -EIO for an earlier failed write.
 */
static inline int export_stream_error(FILE *out)
{
	if (fflush(out))
		return errno > 0 ? -errno : -EIO;
	return ferror(out) ? -EIO : 0;
}

#endif
