// SPDX-License-Identifier: BSD-2-Clause
// Two builds of one XRay-instrumented program whose function ids overlap: -DWIDE=0 has
// fewer functions than -DWIDE=1, so a trace of one read through the other's map is named wrongly.
#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#include <cstdio>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE void leaf(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
}

NOINLINE void middle(int n) { leaf(n); }
#if WIDE
NOINLINE void wide1(int n) { middle(n); }
NOINLINE void wide2(int n) { wide1(n); }
NOINLINE void wide3(int n) { wide2(n); }
NOINLINE void wide4(int n) { wide3(n); }
NOINLINE void top(int n) { wide4(n); }
#else
NOINLINE void top(int n) { middle(n); }
#endif

int main()
{
	if (__xray_log_select_mode("xray-fdr") != XRayLogRegisterStatus::XRAY_REGISTRATION_OK ||
	    __xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0") !=
		    XRayLogInitStatus::XRAY_LOG_INITIALIZED ||
	    __xray_patch() != XRayPatchingStatus::SUCCESS) {
		fprintf(stderr, "XRay FDR mode could not be started\n");
		return 1;
	}
	for (int i = 0; i < 100; i++)
		top(1000);
	if (__xray_log_finalize() != XRayLogInitStatus::XRAY_LOG_FINALIZED ||
	    __xray_log_flushLog() != XRayLogFlushStatus::XRAY_LOG_FLUSHED) {
		fprintf(stderr, "XRay FDR log could not be written\n");
		return 1;
	}
	return 0;
}
