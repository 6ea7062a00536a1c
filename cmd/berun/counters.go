package main

import "github.com/besim/besim/berun/counters"

func countersRoot(root string) counters.Config { return counters.Config{Root: root} }
