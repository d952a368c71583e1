// SPDX-License-Identifier: BSD-2-Clause
// A Go program for the Go tests: main > goTop > goMid > goLeaf, where goLeaf is
// frameless (no calls, no stack frame) and holds nearly all the time, in goStep
// inlined into it.
// Usage: gowork [duration]; it prints "ready" once busy.
package main

import (
	"fmt"
	"os"
	"time"
)

var sink uint64

// goStep is inlined into goLeaf: Go's inline tree names it there.
func goStep(x uint64) uint64 {
	return x*6364136223846793005 + 1442695040888963407
}

//go:noinline
func goLeaf(n uint64) uint64 {
	x := n
	for i := uint64(0); i < 20000; i++ {
		x = goStep(x)
	}
	return x
}

//go:noinline
func goMid(n uint64) uint64 {
	var buf [64]uint64
	for i := range buf {
		buf[i] = goLeaf(n + uint64(i))
	}
	return buf[n%64] + buf[3]
}

//go:noinline
func goTop(n uint64) uint64 {
	return goMid(n) + 1
}

func main() {
	d := 20 * time.Second
	if len(os.Args) > 1 {
		if v, err := time.ParseDuration(os.Args[1]); err == nil {
			d = v
		}
	}
	fmt.Println("ready")
	end := time.Now().Add(d)
	for i := uint64(0); time.Now().Before(end); i++ {
		sink += goTop(i)
	}
	fmt.Println(sink != 1)
}
