/* SPDX-License-Identifier: BSD-2-Clause */
/* SFU_API: what libsfunwind.so exports (it is built with -fvisibility=hidden). */
#ifndef SFUNWIND_API_H
#define SFUNWIND_API_H

#if defined(__GNUC__) || defined(__clang__)
#define SFU_API __attribute__((visibility("default")))
#else
#define SFU_API
#endif

#endif
