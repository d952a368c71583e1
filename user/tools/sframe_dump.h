/* SPDX-License-Identifier: BSD-2-Clause */
/* Printers for a decoded SFrame table: sfprof's own listing and binutils 2.40 readelf's. */
#ifndef SFPROF_SFRAME_DUMP_H
#define SFPROF_SFRAME_DUMP_H

#include <stdio.h>

#include "sfunwind/diag.h"
#include "sfunwind/module.h"
#include "sfunwind/sframe.h"

/** @return where SFrame data came from, in words ("section .sframe"). */
const char *sframe_origin_name(enum sfu_sframe_origin origin);

/**
 * sframe_dump_text() - sfprof's listing of an SFrame table.
 * @path: the file, for the first line.
 * @origin: where the table came from.
 * @m: optional; gives the build ID and the function names.
 *
 * A summary of the header, then one line per function and one per row,
 * in aligned columns.
 *
 * @return 0, or -EIO when writing to @out fails.
 */
int sframe_dump_text(FILE *out, const char *path, const struct sfu_sframe *sf,
		     enum sfu_sframe_origin origin, const struct sfu_module *m);

/**
 * sframe_dump_readelf() - the text binutils 2.40 `readelf --sframe` prints for a section.
 * @secname: the section's name, for the title line.
 * @diag: receives the reason when the table cannot be shown in that format.
 *
 * The table must have been decoded with the section's address, as readelf
 * adds sh_addr to every function start. Everything is checked before the
 * first byte is written, so a refused table writes nothing.
 *
 * @return 0; -ENOTSUP when binutils 2.40 cannot show the table (another
 * version or ABI, an FRE without a CFA offset); -EIO when writing fails.
 */
int sframe_dump_readelf(FILE *out, const struct sfu_sframe *sf, const char *secname,
			struct sfu_diag *diag);

#endif
