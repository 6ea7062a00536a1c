// Package layering sits outside the build of both tools: it states the
// repository's import rules (the layers of docs/ARCHITECTURE.md) as data and
// checks them against a dependency graph, which its test reads from
// `go list -deps`. The rules:
//
//   - the ByteExpress core (byteexpress/...) imports only verbs, its own
//     tree and the standard library;
//   - the models (sim, pfc, fabric, dcqcn, rnic, tcpsim, simhost, faults)
//     import no workload, experiment or scenarios package;
//   - the simulator-free workload packages (SimFree) import no simulator
//     model and not experiment; every package under workloads/ is either
//     simulator-free or a listed simulation driver (Drivers), so a new one
//     must be classified;
//   - nothing under berun/ or cmd/berun links a simulator model or
//     experiment (sim's clock and streams are allowed).
package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path the rules are written relative to.
const Module = "github.com/besim/besim/"

// Models are the simulator's model packages (with their subpackages).
var Models = []string{"sim", "pfc", "fabric", "dcqcn", "rnic", "tcpsim", "simhost", "faults"}

// SimModels are the models a real-host or simulator-free package must not
// link: all but sim, whose virtual Time and seeded streams both runners
// share.
var SimModels = []string{"pfc", "fabric", "dcqcn", "rnic", "tcpsim", "simhost", "faults"}

// SimFree are the workload packages berun can use: no simulator model.
var SimFree = []string{"workloads", "workloads/app", "workloads/failover", "workloads/ps", "workloads/incast", "workloads/perftest",
	"workloads/fragsize", "workloads/hol", "workloads/msgrate", "workloads/mrcache", "workloads/pingpong", "workloads/peak"}

// Drivers are the workload packages that drive the simulator.
var Drivers = []string{"workloads/all", "workloads/failover/failoversim", "workloads/flows", "workloads/fragsize/fragsizesim",
	"workloads/hol/holsim", "workloads/incast/incastsim", "workloads/msgrate/msgratesim", "workloads/mrcache/mrcachesim", "workloads/perftest/perftestsim", "workloads/ps/pssim",
	"workloads/internal/simrun", "workloads/internal/wltest", "workloads/pingpong/pingpongsim", "workloads/peak/peaksim"}

// Graph maps a package (path relative to Module, or a standard library
// path) to its transitive dependencies (as `go list -deps` lists them).
type Graph map[string][]string

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

// std reports whether p is a standard library package (no dot in its
// first element) rather than a module or third-party one.
func std(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// Check returns one line per broken rule, sorted; none when g obeys them.
func Check(g Graph) []string {
	var out []string
	bad := func(pkg, dep, why string) {
		out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, dep, why))
	}
	for pkg, deps := range g {
		if !std(pkg) && strings.HasPrefix(pkg, Module) {
			pkg = strings.TrimPrefix(pkg, Module)
		}
		if under(pkg, "workloads") && !slices.Contains(SimFree, pkg) && !slices.Contains(Drivers, pkg) {
			out = append(out, fmt.Sprintf("%s is neither a simulator-free workload package nor a listed simulation driver (add it to layering.SimFree or layering.Drivers)", pkg))
		}
		for _, dep := range deps {
			local := strings.HasPrefix(dep, Module)
			d := strings.TrimPrefix(dep, Module)
			switch {
			case under(pkg, "byteexpress"):
				if !std(dep) && !(local && (d == "verbs" || under(d, "byteexpress"))) {
					bad(pkg, d, "the core imports only verbs, byteexpress/... and the standard library")
				}
			case underAny(pkg, Models):
				if local && (under(d, "workloads") || under(d, "experiment") || under(d, "scenarios")) {
					bad(pkg, d, "a model imports no workload, experiment or scenarios package")
				}
			case slices.Contains(SimFree, pkg):
				if local && (underAny(d, SimModels) || under(d, "experiment")) {
					bad(pkg, d, "a simulator-free workload package imports no simulator model")
				}
			}
			if (under(pkg, "berun") || under(pkg, "cmd/berun")) && local && (underAny(d, SimModels) || under(d, "experiment") || under(d, "workloads") && !slices.Contains(SimFree, d)) {
				bad(pkg, d, "berun runs on real hosts and links no simulator model")
			}
		}
	}
	sort.Strings(out)
	return out
}
