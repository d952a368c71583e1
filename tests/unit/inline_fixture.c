/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An inlined chain known by construction, built -O2 -g (test_session):
 * inline_fixture_inner, inlined into inline_fixture_middle, inlined into
 * inline_fixture_outer, calls inline_fixture_ra, which returns its return
 * address: an address inside the chain, as a sampled pc and as a caller's.
 */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

void *inline_fixture_ra(void);
void *inline_fixture_outer(void);

volatile int inline_fixture_sink;

__attribute__((noinline)) void *inline_fixture_ra(void)
{
	return __builtin_return_address(0);
}

ALWAYS_INLINE void *inline_fixture_inner(void)
{
	/* the sink after the call: no tail call, the return address stays in here */
	void *ra = inline_fixture_ra();

	inline_fixture_sink++;
	return ra;
}

ALWAYS_INLINE void *inline_fixture_middle(void)
{
	void *ra = inline_fixture_inner();

	inline_fixture_sink++;
	return ra;
}

__attribute__((noinline)) void *inline_fixture_outer(void)
{
	void *ra = inline_fixture_middle();

	inline_fixture_sink++;
	return ra;
}
