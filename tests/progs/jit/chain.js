// SPDX-License-Identifier: BSD-2-Clause
// A JIT workload whose call chain is known by construction (tests/integration/jit_test.py):
//   jit_main -> jit_outer -> jit_middle -> jit_leaf
// until the process has used SECONDS of CPU time (argument, default 4), the time spent in
// jit_leaf's integer loop. CPU time, not the clock's: on a loaded machine a run timed by the
// clock gets fewer samples while its start-up costs the same, and its share of the samples
// that name no function of the program grows.
//
// V8 inlines small functions into their callers; TurboFan does not inline one whose
// bytecode is over --max-inlined-bytecode-size (460 bytes in Node 20). Each function
// carries a cold path (never taken: `seed === COLD`) that makes it about 600 bytes of
// bytecode, so every function keeps a frame of its own with no runtime flags
// (`node --trace-turbo-inlining chain.js 1` prints no "Inlining" line).
'use strict';

const COLD = -0x5eed;

function cold(x) {
  // never called; the caller's cold path only names it
  return x;
}

function jit_leaf(n, seed) {
  let x = seed | 0;
  if (seed === COLD) {
    x = (Math.imul(x, 3) + 1) ^ (x >>> 1); x = (Math.imul(x, 5) + 2) ^ (x >>> 2);
    x = (Math.imul(x, 7) + 3) ^ (x >>> 3); x = (Math.imul(x, 9) + 4) ^ (x >>> 4);
    x = (Math.imul(x, 11) + 5) ^ (x >>> 5); x = (Math.imul(x, 13) + 6) ^ (x >>> 6);
    x = (Math.imul(x, 15) + 7) ^ (x >>> 7); x = (Math.imul(x, 17) + 8) ^ (x >>> 8);
    x = (Math.imul(x, 19) + 9) ^ (x >>> 9); x = (Math.imul(x, 21) + 10) ^ (x >>> 10);
    x = (Math.imul(x, 23) + 11) ^ (x >>> 11); x = (Math.imul(x, 25) + 12) ^ (x >>> 12);
    x = (Math.imul(x, 27) + 13) ^ (x >>> 13); x = (Math.imul(x, 29) + 14) ^ (x >>> 14);
    x = (Math.imul(x, 31) + 15) ^ (x >>> 15); x = (Math.imul(x, 33) + 16) ^ (x >>> 16);
    x = (Math.imul(x, 35) + 17) ^ (x >>> 17); x = (Math.imul(x, 37) + 18) ^ (x >>> 18);
    return cold(x);
  }
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345 + i) | 0;
    x ^= x >>> 13;
  }
  return x;
}

function jit_middle(seed) {
  let acc = seed | 0;
  if (seed === COLD) {
    acc = (Math.imul(acc, 3) + 1) ^ (acc >>> 1); acc = (Math.imul(acc, 5) + 2) ^ (acc >>> 2);
    acc = (Math.imul(acc, 7) + 3) ^ (acc >>> 3); acc = (Math.imul(acc, 9) + 4) ^ (acc >>> 4);
    acc = (Math.imul(acc, 11) + 5) ^ (acc >>> 5); acc = (Math.imul(acc, 13) + 6) ^ (acc >>> 6);
    acc = (Math.imul(acc, 15) + 7) ^ (acc >>> 7); acc = (Math.imul(acc, 17) + 8) ^ (acc >>> 8);
    acc = (Math.imul(acc, 19) + 9) ^ (acc >>> 9); acc = (Math.imul(acc, 21) + 10) ^ (acc >>> 10);
    acc = (Math.imul(acc, 23) + 11) ^ (acc >>> 11); acc = (Math.imul(acc, 25) + 12) ^ (acc >>> 12);
    acc = (Math.imul(acc, 27) + 13) ^ (acc >>> 13); acc = (Math.imul(acc, 29) + 14) ^ (acc >>> 14);
    acc = (Math.imul(acc, 31) + 15) ^ (acc >>> 15); acc = (Math.imul(acc, 33) + 16) ^ (acc >>> 16);
    acc = (Math.imul(acc, 35) + 17) ^ (acc >>> 17); acc = (Math.imul(acc, 37) + 18) ^ (acc >>> 18);
    return cold(acc);
  }
  for (let k = 0; k < 4; k++) {
    acc = (acc + jit_leaf(20000, seed + k)) | 0;
  }
  return acc;
}

function jit_outer(seed) {
  let acc = seed | 0;
  if (seed === COLD) {
    acc = (Math.imul(acc, 3) + 1) ^ (acc >>> 1); acc = (Math.imul(acc, 5) + 2) ^ (acc >>> 2);
    acc = (Math.imul(acc, 7) + 3) ^ (acc >>> 3); acc = (Math.imul(acc, 9) + 4) ^ (acc >>> 4);
    acc = (Math.imul(acc, 11) + 5) ^ (acc >>> 5); acc = (Math.imul(acc, 13) + 6) ^ (acc >>> 6);
    acc = (Math.imul(acc, 15) + 7) ^ (acc >>> 7); acc = (Math.imul(acc, 17) + 8) ^ (acc >>> 8);
    acc = (Math.imul(acc, 19) + 9) ^ (acc >>> 9); acc = (Math.imul(acc, 21) + 10) ^ (acc >>> 10);
    acc = (Math.imul(acc, 23) + 11) ^ (acc >>> 11); acc = (Math.imul(acc, 25) + 12) ^ (acc >>> 12);
    acc = (Math.imul(acc, 27) + 13) ^ (acc >>> 13); acc = (Math.imul(acc, 29) + 14) ^ (acc >>> 14);
    acc = (Math.imul(acc, 31) + 15) ^ (acc >>> 15); acc = (Math.imul(acc, 33) + 16) ^ (acc >>> 16);
    acc = (Math.imul(acc, 35) + 17) ^ (acc >>> 17); acc = (Math.imul(acc, 37) + 18) ^ (acc >>> 18);
    return cold(acc);
  }
  for (let k = 0; k < 4; k++) {
    acc ^= jit_middle(Math.imul(seed, 7) + k);
  }
  return acc;
}

function cpu_seconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function jit_main(seconds) {
  let acc = 0;
  let rounds = 0;
  while (cpu_seconds() < seconds) {
    acc ^= jit_outer(rounds);
    rounds++;
  }
  return [acc, rounds];
}

const seconds = Number(process.argv[2] || 4);
const [acc, rounds] = jit_main(seconds);
console.log(`chain.js: ${rounds} rounds in ${seconds} s of CPU time (${acc >>> 0})`);
