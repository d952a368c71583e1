/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind test program in C++: methods, virtual calls, templates, exceptions, a C callback. */
#include <cstdio>
#include <stdexcept>

#include "libchain.h"
#include "snapshot.h"

/*
 * Snapshots written (tag: expected chain, innermost first; symbols are the
 * mangled names the symbol table holds):
 *   virtual-leaf:  Square::area (a leaf) Walker::measure run_all main
 *   method:        Walker::walk run_all main
 *   functor:       Counter::operator() Walker::walk run_all main
 *   cxx-lib:       chain_step chain_apply Walker::walk run_all main
 *   cxx-callback:  Walker::on_callback chain_step chain_apply Walker::walk run_all main
 *   template:      depth<0> depth<1> depth<2> depth<3> run_all main
 *   throwing:      thrower run_all main                (then throws through the chain)
 *
 * Capturing in a catch handler is avoided on purpose: at -O2 the handler is
 * moved to "run_all.cold", a symbol of its own.
 */

namespace app {

static volatile int sink;

struct Shape {
	virtual ~Shape() = default;
	virtual int area(int x) const = 0;
};

struct Square : Shape {
	int side = 3;
	int area(int x) const override;
};

/* A leaf: no call, the capture is written by the caller. */
SFU_SNAP_NOINLINE int Square::area(int x) const
{
	SFU_SNAP_FUNC_AS("_ZNK3app6Square4areaEi");

	SFU_SNAP_CAPTURE();
	return side * side + x;
}

struct Counter {
	int count = 0;
	int operator()(int x);
};

SFU_SNAP_NOINLINE int Counter::operator()(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app7CounterclEi");

	SFU_SNAPSHOT("functor");
	return count += x;
}

class Walker {
public:
	int walk(int x);
	int measure(const Shape &shape, int x);
	static int on_callback(int x);
};

SFU_SNAP_NOINLINE int Walker::on_callback(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app6Walker11on_callbackEi");

	SFU_SNAPSHOT("cxx-callback");
	return x * 5;
}

/* A virtual call: the dynamic type is not visible here. */
SFU_SNAP_NOINLINE int Walker::measure(const Shape &shape, int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app6Walker7measureERKNS_5ShapeEi");
	int r = shape.area(x);

	sfu_snap__write("virtual-leaf");
	return r + 1;
}

SFU_SNAP_NOINLINE int Walker::walk(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app6Walker4walkEi");
	Counter counter;

	SFU_SNAPSHOT("method");
	int r = counter(x);
	r += chain_apply(on_callback, x, "cxx-lib");
	return r + sink;
}

template <int N> int depth(int x);

template <> SFU_SNAP_NOINLINE int depth<0>(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app5depthILi0EEEii");

	SFU_SNAPSHOT("template");
	return x;
}

#define DEPTH_LEVEL(n, name)                                                   \
	template <> SFU_SNAP_NOINLINE int depth<n>(int x)                      \
	{                                                                      \
		SFU_SNAP_FUNC_AS(name);                                        \
		return depth<n - 1>(x + n) * 2;                                \
	}
DEPTH_LEVEL(1, "_ZN3app5depthILi1EEEii")
DEPTH_LEVEL(2, "_ZN3app5depthILi2EEEii")
DEPTH_LEVEL(3, "_ZN3app5depthILi3EEEii")

SFU_SNAP_NOINLINE int thrower(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app7throwerEi");

	SFU_SNAPSHOT("throwing");
	if (x > 0)
		throw std::runtime_error("unwound by the C++ runtime too");
	return x;
}

SFU_SNAP_NOINLINE int run_all(int x)
{
	SFU_SNAP_FUNC_AS("_ZN3app7run_allEi");
	Square square;
	Walker walker;
	int r = 0;

	r += walker.measure(square, x);
	r += walker.walk(x);
	r += depth<3>(x);
	try {
		r += thrower(x);
	} catch (const std::runtime_error &) {
		r += 100;
	}
	return r + sink;
}

} // namespace app

int main(int argc, char **argv)
{
	SFU_SNAP_FUNC();

	if (argc != 2) {
		std::fprintf(stderr, "usage: %s OUTPUT-DIR\n", argv[0]);
		return 2;
	}
	if (sfu_snap__init(argv[1]))
		return 1;
	app::sink = app::run_all(argc);
	sfu_snap__thread_fini();
	return sfu_snap__status();
}
