// SPDX-License-Identifier: BSD-2-Clause
// Ordinary -O2 -g C++ for the stepping tests: a throw from an inlined function.
//
// usage: steps_throw [V]
//
//   main run_throw thrower, thrower holding check (always_inline), which
//   throws Oops when V > 2 (the default, 5); run_throw catches it.
//   `catch throw` stops in __cxa_throw with check, thrower, run_throw and
//   main below it.
#include <cstdio>
#include <cstdlib>

#define KEEP __attribute__((noinline, noclone))
#define INLINE static inline __attribute__((always_inline))

namespace steps {

volatile int sink;

struct Oops {
	int v;
};

INLINE void check(int v)
{
	sink += v;
	if (v > 2)
		throw Oops{v};
}

KEEP int thrower(int v)
{
	check(v);
	sink++;
	return v;
}

KEEP int run_throw(int v)
{
	try {
		return thrower(v);
	} catch (const Oops &o) {
		return -o.v;
	}
}

} // namespace steps

int main(int argc, char **argv)
{
	int v = argc > 1 ? std::atoi(argv[1]) : 5;

	std::printf("%d\n", steps::run_throw(v));
	return 0;
}
