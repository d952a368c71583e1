/* SPDX-License-Identifier: BSD-2-Clause */
/* libsfunwind: SFrame-based user stack unwinding. Include this for the whole API. */
#ifndef SFUNWIND_H
#define SFUNWIND_H

#include "sfunwind/diag.h"
#include "sfunwind/sframe.h"
#include "sfunwind/ehframe.h"
#include "sfunwind/code.h"
#include "sfunwind/module.h"
#include "sfunwind/addrspace.h"
#include "sfunwind/unwind.h"
#include "sfunwind/cbf.h"

#endif
