// Package ps is the parameter-server workload, written once for both
// runners and free of the simulator; it follows the paper's §2.1 (Figure
// 1; Tables 5-7 measure it). It holds the configuration and its
// translation from a scenario, shard placement, fetch draws, the message
// header, the reply-size rule and the application logic as driven state
// machines (Client, Server: machine.go). besim drives them over the
// simulated cluster (package pssim), berun's ps roles over kernel TCP or
// the core on verbs. It imports no simulator model.
package ps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/app"
)

// Config is the parameter-server cluster of the paper's §2.1 (Figure 1):
// model parameters in Shards shards, placed on Servers parameter servers by
// hashing the shard id; Rankers (inference) and Trainers (training) on
// their own hosts.
//
// A ranker keeps RankerOutstanding user requests in flight (closed loop;
// or Poisson arrivals at RankerRate per second, at most RankerOutstanding
// in flight: an arrival that finds them all busy is dropped and counted). A user request needs
// FanOut shards, drawn uniformly; it becomes one fetch
// sub-request per distinct server holding them, answered with one
// FetchResponse-sized value per shard; the user request completes when
// every sub-request has. A trainer iterates: fetch TrainerShards shards
// (as a ranker), compute for Compute, push one PushSize update per shard
// to the servers holding them (each acknowledged with 32 bytes), repeat.
//
// Topology: a leaf-spine of HostsPerLeaf-host leaves and Spines spines,
// rankers then trainers from host 0, the servers from the next leaf on.
type Config struct {
	HostsPerLeaf      int // default app.DefaultHostsPerLeaf
	Spines            int // spine switches, one uplink from every leaf to each; default app.DefaultSpines
	Servers, Shards   int
	Rankers, Trainers int
	Request           int // fetch request size, >= 24; default 64
	FanOut            int // shards per user request; default 8
	RankerOutstanding int // user requests in flight per ranker; default 4
	RankerRate        float64
	FetchResponse     app.SizeDist // per shard; default lognormal mean 20 KB, P99 50 KB
	TrainerShards     int          // default FanOut
	Compute           sim.Time     // trainer compute per iteration; default 100 us
	PushSize          app.SizeDist // per shard; default = FetchResponse
	Warmup, Measure   sim.Time     // defaults 500 us, 2 ms
	Seed              uint64
	// Transport is RDMA (default: ByteExpress) or TCP (kernel TCP).
	Transport string
	// Replicas is how many servers hold each shard group (ReplicaSet);
	// 0 or 1: one, the paper's Figure 1 without replication. More than
	// one needs a runner whose clients choose among them (besim's RPC
	// layer, pssim Config.RPC); Prepare checks only 1 <= Replicas <=
	// Servers.
	Replicas int
}

// The message header, shared by besim's simulation and berun's roles: slot
// (8 bytes) | send time (8) | op (1) | shard count (4) | pad.
const (
	OpFetch    = 0
	OpPush     = 1
	HeaderSize = 24
)

// Defaults fills the zero fields with the defaults named in Config.
func (c *Config) Defaults() {
	if c.HostsPerLeaf == 0 {
		c.HostsPerLeaf = app.DefaultHostsPerLeaf
	}
	if c.Spines == 0 {
		c.Spines = app.DefaultSpines
	}
	if c.Request == 0 {
		c.Request = 64
	}
	if c.FanOut == 0 {
		c.FanOut = 8
	}
	if c.RankerOutstanding == 0 {
		c.RankerOutstanding = 4
	}
	if c.FetchResponse.Kind == "" {
		c.FetchResponse = app.SizeDist{Kind: app.LogNormal, Mean: 20_000, P99: 50_000}
	}
	if c.TrainerShards == 0 {
		c.TrainerShards = c.FanOut
	}
	if c.Compute == 0 {
		c.Compute = 100 * sim.Microsecond
	}
	if c.PushSize.Kind == "" {
		c.PushSize = c.FetchResponse
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * sim.Microsecond
	}
	if c.Measure == 0 {
		c.Measure = 2 * sim.Millisecond
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
}

// Transports a PS cluster can run over.
const (
	RDMA = "rdma" // ByteExpress over the simulated RNICs (default)
	TCP  = "tcp"  // the kernel TCP model of package tcpsim: the paper's §8 baseline
)

// Prepare applies the defaults, checks c and prepares its size
// distributions (samples clamped to 16 MiB).
func (c *Config) Prepare() error {
	c.Defaults()
	switch {
	case c.Servers < 1 || c.Shards < 1 || c.Rankers+c.Trainers < 1 || c.Rankers < 0 || c.Trainers < 0:
		return errors.New("workloads: ps needs servers, shards >= 1 and at least one ranker or trainer")
	case c.FanOut < 1 || c.FanOut > c.Shards || c.TrainerShards < 1 || c.TrainerShards > c.Shards:
		return errors.New("workloads: ps fan-out and trainer shards must be in [1, shards]")
	case c.Request < HeaderSize || c.RankerOutstanding < 1 || c.RankerRate < 0 || c.Compute < 0:
		return fmt.Errorf("workloads: ps needs request >= %d, ranker outstanding >= 1, rate and compute >= 0", HeaderSize)
	case c.Transport != "" && c.Transport != RDMA && c.Transport != TCP:
		return fmt.Errorf("workloads: ps transport %q: allowed rdma, tcp", c.Transport)
	case c.Replicas < 0 || c.Replicas > c.Servers:
		return fmt.Errorf("workloads: ps replicas %d: allowed 1 to servers (%d)", c.Replicas, c.Servers)
	}
	for _, d := range []*app.SizeDist{&c.FetchResponse, &c.PushSize} {
		if err := d.Prepare(); err != nil {
			return fmt.Errorf("workloads: ps size: %w", err)
		}
		if d.MaxSize == 0 {
			d.MaxSize = 16 << 20
		}
	}
	return nil
}

// ReplySize draws a server's answer to a request of op for shards shards:
// one FetchResponse value per shard for a fetch (at least a header), a
// header and 8 bytes for a push.
func (c *Config) ReplySize(rng *rand.Rand, op byte, shards int) int {
	if op != OpFetch {
		return HeaderSize + 8
	}
	n := 0
	for range shards {
		n += c.FetchResponse.Sample(rng)
	}
	return max(n, HeaderSize)
}

// ReplicaSet is the servers holding shard group g (the shards ShardServers
// places on server g) when each group has replicas copies, in preference
// order: g itself (the primary, where ShardServers puts the group), then
// g+1, ..., g+replicas-1, modulo servers (chained declustering: server i
// also holds the groups of its replicas-1 predecessors). With replicas 1 it
// is [g]. The paper places whole replicas of the n shards in different
// mini-pods (§7.2, "Replication across failure domains"); the ps-cluster's
// fabric has no mini-pods, so the copies share the servers instead: R
// replicas cost no extra hosts, and a failed server's load moves onto its
// successors (the capacity the paper says the policy depends on).
func ReplicaSet(g, replicas, servers int) []int {
	out := make([]int, replicas)
	for k := range out {
		out[k] = (g + k) % servers
	}
	return out
}

// ShardServers places shards on servers by hashing the shard id (FNV-1a of
// its little-endian uint64): entry s is the server holding shard s. besim's
// ps-cluster and berun's ps roles both use it, so a shard lives on the same
// server index in simulation and on hardware.
func ShardServers(shards, servers int) []int {
	out := make([]int, shards)
	for s := range out {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(s))
		h.Write(b[:])
		out[s] = int(h.Sum64() % uint64(servers))
	}
	return out
}

// DrawFetch draws n shards uniformly with replacement (a repeated shard is
// fetched twice, as two models may need it) and groups them by server: it
// appends to servers the distinct servers touched, in first-drawn order,
// and to shards how many draws each got. One fetch sub-request goes to
// each server.
func DrawFetch(rng *rand.Rand, n int, shardServer []int, servers, shards []int) ([]int, []int) {
	for range n {
		srv := shardServer[rng.IntN(len(shardServer))]
		dup := false
		for j, v := range servers {
			if v == srv {
				shards[j]++
				dup = true
				break
			}
		}
		if !dup {
			servers = append(servers, srv)
			shards = append(shards, 1)
		}
	}
	return servers, shards
}
