// Package all sits at the top of the workloads tree: importing it links
// every workload package, each of which registers its scenario kinds with
// the experiment registry in its init. cmd/besim and the tests that run
// scenarios of every kind import it for that effect alone.
package all

import (
	_ "github.com/besim/besim/workloads/failover/failoversim" // workload failover (§7.2)
	_ "github.com/besim/besim/workloads/flows"                // flow scenarios (raw, rc, ud)
	_ "github.com/besim/besim/workloads/fragsize/fragsizesim" // benchmark fragsize (Figure 10)
	_ "github.com/besim/besim/workloads/hol/holsim"           // benchmark hol (Figure 13)
	_ "github.com/besim/besim/workloads/incast/incastsim"     // workload incast-pull (Table 4, Figures 14-15)
	_ "github.com/besim/besim/workloads/mrcache/mrcachesim"   // benchmark mrcache (§5.2, MR translation caches)
	_ "github.com/besim/besim/workloads/msgrate/msgratesim"   // benchmark msgrate (Figure 11)
	_ "github.com/besim/besim/workloads/peak/peaksim"         // benchmark peak (Figure 9)
	_ "github.com/besim/besim/workloads/perftest/perftestsim" // benchmark perftest (Table 2)
	_ "github.com/besim/besim/workloads/pingpong/pingpongsim" // benchmark pingpong (Figure 8)
	_ "github.com/besim/besim/workloads/ps/pssim"             // workload ps-cluster (§2.1, Tables 5-7)
)
