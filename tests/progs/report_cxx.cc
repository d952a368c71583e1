// SPDX-License-Identifier: BSD-2-Clause
// sfprof report test program: a C++ hot function in a namespace and a class template.
#include <csignal>
#include <cstdlib>
#include <sys/time.h>

/*
 * Built with g++ -O2 -fomit-frame-pointer -Wa,--gsframe; the driver
 * (tests/integration/report_test.py) records it and expects the report to
 * name its hot function demangled, as c++filt does:
 *
 *   ns::Klass<int>::spin(int)   ns::outer(int)   main
 *
 * until SIGALRM (setitimer) ends the spin.
 *
 * Usage: report_cxx MILLISECONDS
 */

#define NOIPA __attribute__((noipa))

static volatile std::sig_atomic_t stop;

static void on_alarm(int)
{
	stop = 1;
}

namespace ns {

template <typename T> struct Klass {
	volatile T acc;
	NOIPA T spin(T x);
};

template <typename T> NOIPA T Klass<T>::spin(T x)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			acc = acc + (x ^ i);
	return acc;
}

template struct Klass<int>;

NOIPA int outer(int x)
{
	Klass<int> k{};
	int r = k.spin(x);

	return r + 1;
}

} // namespace ns

int main(int argc, char **argv)
{
	struct itimerval it = {};
	long ms;

	if (argc != 2 || (ms = std::atol(argv[1])) <= 0)
		return 2;
	std::signal(SIGALRM, on_alarm);
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = ms % 1000 * 1000;
	setitimer(ITIMER_REAL, &it, nullptr);
	return ns::outer(static_cast<int>(ms)) == 12345;
}
