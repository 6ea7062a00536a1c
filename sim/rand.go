package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns the deterministic random stream of one component: a PCG
// generator seeded from the scenario seed and the component's name. Adding a
// component never perturbs another's draws, which keeps sweeps comparable.
func Stream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()^0x9e3779b97f4a7c15))
}
