// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as the _Py_DebugOffsets at the start of a 3.13
 * _PyRuntime (user/record/python.c), the bytes a process's file gives the
 * recorder. Whatever it holds, an accepted layout keeps every offset where
 * the sampler's walk reads (frames inside its window, other structs below
 * 64 KiB), and a frame's instruction offset made from it is inside the
 * bytecode or refused. The first byte picks the minor version asked for.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what)
{
	fprintf(stderr, "fuzz_pydebug: contract broken: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sample_py_frame f;
	struct py_proc p;
	uint32_t cca;
	uint64_t off;
	unsigned minor;

	if (!size)
		return 0;
	minor = 10 + data[0] % 6;
	if (python_layout__debug_offsets(data + 1, size - 1, minor, &p, &cca))
		return 0;
	if (minor != 13 || p.version != 313 || p.kind != PY_KIND_312)
		broken("a layout for another version");
	if (p.f_window > PY_FRAME_WINDOW || p.f_code + 8u > p.f_window ||
	    p.f_back + 8u > p.f_window || p.f_instr + 8u > p.f_window || p.f_owner + 1u > p.f_window)
		broken("a frame field outside the window read");
	if (p.interp_next >= PY_OFF_NONE - 8 || p.interp_threads >= PY_OFF_NONE - 8 ||
	    p.ts_next >= PY_OFF_NONE - 8 || p.ts_id >= PY_OFF_NONE - 8 ||
	    p.ts_frame >= PY_OFF_NONE - 8 || p.interp_head >= (1u << 24))
		broken("a struct field past its bound");
	if (!cca || cca >= 4096 || !p.code_check_words || p.code_check_words > PY_CHECK_WORDS ||
	    p.code_check >= cca)
		broken("code object offsets past their bound");
	/* instruction offsets from the layout: inside the bytecode's 16 MiB, or refused */
	memset(&f, 0, sizeof(f));
	if (size >= 17) {
		memcpy(&f.code, data + size - 16, 8);
		memcpy(&f.instr, data + size - 8, 8);
	}
	off = python__instr_offset(minor, cca, &f);
	if (off != UINT64_MAX && off >= (16u << 20))
		broken("an instruction offset past the bytecode bound");
	return 0;
}
