package main

import (
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/besim/besim/sweep"
	_ "github.com/besim/besim/workloads/all"
)

func main() {
	b, err := sweep.Load(os.Args[2])
	if err != nil {
		panic(err)
	}
	runtime.MemProfileRate = 16 << 10
	var set []sweep.Override
	for i := 3; i+1 < len(os.Args); i += 2 {
		set = append(set, sweep.Override{Key: os.Args[i], Value: os.Args[i+1]})
	}
	s, err := b.Apply(set)
	if err != nil {
		panic(err)
	}
	_, _, err = sweep.Simulate(s)
	if err != nil {
		panic(err)
	}
	runtime.GC()
	f, _ := os.Create(os.Args[1])
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
}
