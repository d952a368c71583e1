// SPDX-License-Identifier: BSD-2-Clause
// A JIT workload whose call chain is known by construction (tests/integration/jit_test.py):
//   jit_main -> jit_outer -> jit_middle -> jit_leaf
// until the process has used SECONDS of CPU time (argument, default 4; not of the clock,
// whose runs on a loaded machine get fewer samples for the same start-up), the time spent
// in jit_leaf's integer loop.
// Compiled at test time (javac -d TMPDIR); run with -XX:CompileCommand=dontinline,Chain::*
// so that C1 and C2 give every method a frame of its own. main() loops until the CPU time
// is used and calls jit_main() thousands of times a second: a method called once and
// looping stays interpreted (HotSpot's "Interpreter" frame, no name) until on-stack
// replacement, which takes tens of thousands of back-edges; jit_main is compiled within a
// fraction of a second.
public final class Chain {
    static int jit_leaf(int n, int seed) {
        int x = seed;
        for (int i = 0; i < n; i++) {
            x = x * 1103515245 + 12345 + i;
            x ^= x >>> 13;
        }
        return x;
    }

    static int jit_middle(int seed) {
        int acc = seed;
        for (int k = 0; k < 4; k++) {
            acc += jit_leaf(2000, seed + k);
        }
        return acc;
    }

    static int jit_outer(int seed) {
        int acc = seed;
        for (int k = 0; k < 4; k++) {
            acc ^= jit_middle(seed * 7 + k);
        }
        return acc;
    }

    static int jit_main(int seed) {
        int acc = seed;
        for (int k = 0; k < 2; k++) {
            acc ^= jit_outer(seed * 3 + k);
        }
        return acc;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 4.0;
        long cpuNanos = (long) (seconds * 1e9);
        int acc = 0;
        long rounds = 0;
        // the process's CPU time (all its threads, as sampled), read every 64 rounds (~5 ms)
        while ((rounds & 63) != 0 || cpuTime() < cpuNanos) {
            acc ^= jit_main((int) rounds);
            rounds++;
        }
        System.out.println("Chain.java: " + rounds + " rounds in " + seconds + " s of CPU time ("
                           + acc + ")");
    }

    static long cpuTime() {
        return ProcessHandle.current().info().totalCpuDuration()
            .map(java.time.Duration::toNanos).orElse(Long.MAX_VALUE);
    }
}
