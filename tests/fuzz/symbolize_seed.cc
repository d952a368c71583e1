// SPDX-License-Identifier: BSD-2-Clause
/* A C++ program for fuzz_symbolize's seeds: mangled names of many kinds, with DWARF lines, no library headers. */
#define NOINLINE __attribute__((noinline))

namespace seed {
namespace inner {

template <typename T, int N> struct box {
	T v[N];
	NOINLINE T sum() const
	{
		T s = T();
		for (int i = 0; i < N; i++)
			s = s + v[i];
		return s;
	}
	NOINLINE box operator+(const box &o) const
	{
		box r = *this;
		for (int i = 0; i < N; i++)
			r.v[i] = r.v[i] + o.v[i];
		return r;
	}
};

struct base {
	virtual ~base() {}
	virtual long run(long x) const = 0;
};

struct twice : base {
	NOINLINE long run(long x) const override { return 2 * x; }
};

} // namespace inner

template <typename F> NOINLINE long apply(F f, long x)
{
	return f(x) + 1;
}

NOINLINE long overloaded(long x) { return x + 1; }
NOINLINE double overloaded(double x, const char *) { return x * 2; }

} // namespace seed

static volatile long sink;

int main(int argc, char **)
{
	seed::inner::box<long, 3> a = { { argc, 2, 3 } }, b = { { 4, 5, 6 } };
	seed::inner::box<double, 2> c = { { 1.5, 2.5 } };
	seed::inner::twice t;
	const seed::inner::base &r = t;

	sink = (a + b).sum() + (long)c.sum() + r.run(argc);
	sink += seed::apply([](long x) { return x * 3; }, sink);
	sink += seed::overloaded(sink) + (long)seed::overloaded(1.0, "x");
	return 0;
}
