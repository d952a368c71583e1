/* SPDX-License-Identifier: BSD-2-Clause */
/* Why a call failed, in words a program can print. */
#ifndef SFUNWIND_DIAG_H
#define SFUNWIND_DIAG_H

#include "sfunwind/api.h"
#include "sfunwind/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Filled by functions that take one when they fail on bad input; `reason`
 * is a complete sentence fragment without a trailing newline, for example
 * "FDE 3: FRE offset 0x1234 past the end of the FRE sub-section".
 */
struct sfu_diag {
	int err;		/* the negative errno also returned */
	char reason[192];
};

#ifdef __cplusplus
}
#endif

#endif
