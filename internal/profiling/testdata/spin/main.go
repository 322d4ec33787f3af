// Command spin spends its time in main.spin, for the perf test.
package main

import "fmt"

//go:noinline
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	var x uint64
	for i := 0; i < 1_000_000; i++ {
		x += spin(100_000)
	}
	fmt.Println(x)
}
