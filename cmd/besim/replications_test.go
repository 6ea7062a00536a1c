package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sweep"
)

// schedulerVars are every variable sweep.ShardFromEnv reads; a test
// clears them all before setting its own.
var schedulerVars = []string{"BESIM_SHARD", "BESIM_SHARDS", "BESIM_SHARD_FIRST",
	"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT",
	"SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST", "SGE_TASK_STEPSIZE",
	"PBS_ARRAY_INDEX", "LSB_JOBINDEX", "JOB_COMPLETION_INDEX"}

// TestReplicationShardsFromScheduler runs a 4-replication sweep as a
// 4-task Slurm array (the shard comes from the array variables, as in
// bench/batch/slurm-replications.sbatch), merges the shards, and checks
// that the merged file equals the unsharded run and that its pooled P99 is
// the P99 of the merged histograms of the four runs made one by one with
// besim run.
func TestReplicationShardsFromScheduler(t *testing.T) {
	dir := t.TempDir()
	for _, k := range schedulerVars {
		t.Setenv(k, "")
	}
	args := []string{"-q", "--replications", "4", "--set", "workload.servers=8", "--set", "duration=200us", "--metrics", "pull/p99,pull/count"}
	var shards []string
	for task := 1; task <= 4; task++ { // --array=1-4
		t.Setenv("SLURM_ARRAY_TASK_ID", fmt.Sprint(task))
		t.Setenv("SLURM_ARRAY_TASK_MIN", "1")
		t.Setenv("SLURM_ARRAY_TASK_MAX", "4")
		t.Setenv("SLURM_ARRAY_TASK_COUNT", "4")
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", task))
		_, errs := besim(t, append([]string{"sweep", "-o", f, "fig14-incast"}, args...)...)
		if want := fmt.Sprintf("shard %d/4 from Slurm", task-1); !strings.Contains(errs, want) {
			t.Fatalf("task %d: stderr lacks %q:\n%s", task, want, errs)
		}
		shards = append(shards, f)
	}
	for _, k := range schedulerVars {
		t.Setenv(k, "")
	}
	merged := filepath.Join(dir, "merged.json")
	besim(t, append([]string{"merge", "-o", merged}, shards...)...)
	whole := filepath.Join(dir, "whole.json")
	besim(t, append([]string{"sweep", "-o", whole, "fig14-incast"}, args...)...)
	if string(read(t, merged)) != string(read(t, whole)) {
		t.Fatal("the merged shards differ from the unsharded replication sweep")
	}

	res, err := readResult(merged)
	if err != nil {
		t.Fatal(err)
	}
	const key = "workload.servers=8,duration=200us,histogram=pull_latency"
	pooled, ok := res.Tables[1].Value(key, "p99")
	if res.Tables[1].Name != sweep.TableReplications || !ok {
		t.Fatalf("no pooled p99 at %s in table %s", key, res.Tables[1].Name)
	}
	runs, _ := res.Tables[1].Value(key, "runs pooled")
	count, _ := res.Tables[1].Value(key, "count")

	// The four runs one by one (seeds 1..4: fig14-incast has seed 1).
	var all *metrics.Histogram
	var p99s []float64
	for seed := 1; seed <= 4; seed++ {
		out := filepath.Join(dir, fmt.Sprint("run", seed))
		besim(t, "run", "-q", "--out", out, "--set", "workload.servers=8", "--set", "duration=200us", "--set", fmt.Sprint("seed=", seed), "fig14-incast")
		r, err := readResult(filepath.Join(out, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		tbl, ok := r.Table(metrics.TablePrefix + "pull_latency")
		if !ok {
			t.Fatalf("seed %d: no histogram table", seed)
		}
		h, err := metrics.FromTable(*tbl)
		if err != nil {
			t.Fatal(err)
		}
		if all == nil {
			all = metrics.New(h.Digits())
		}
		if err := all.Merge(h); err != nil {
			t.Fatal(err)
		}
		p99s = append(p99s, float64(h.P99()))
		// The sweep's row for this run is the run's own metric.
		row, _ := res.Tables[0].Value(fmt.Sprintf("workload.servers=8,duration=200us,seed=%d", seed), "pull/p99")
		if m, _ := r.Metric("pull/p99"); row != m.Value {
			t.Errorf("seed %d: sweep row pull/p99 %v, besim run %v", seed, row, m.Value)
		}
	}
	if runs != 4 || count != float64(all.Count()) || pooled != float64(all.P99()) {
		t.Errorf("pooled: %v runs, %v values, P99 %v; the merged histogram of the four runs: 4 runs, %d values, P99 %d", runs, count, pooled, all.Count(), all.P99())
	}
	mean := (p99s[0] + p99s[1] + p99s[2] + p99s[3]) / 4
	if got, _ := res.Tables[1].Value(key, "run p99 mean"); got != mean {
		t.Errorf("run p99 mean %v, want %v", got, mean)
	}
	lo, _ := res.Tables[1].Value(key, "run p99 ci95 lo")
	hi, _ := res.Tables[1].Value(key, "run p99 ci95 hi")
	if !(lo <= mean && mean <= hi) {
		t.Errorf("ci95 [%v, %v] does not hold the mean %v", lo, hi, mean)
	}
	// The pooled histogram table is the merged one, bucket for bucket.
	ht, ok := res.Table(sweep.PooledPrefix + "pull_latency [workload.servers=8,duration=200us]")
	if !ok {
		t.Fatal("no pooled histogram table")
	}
	want := all.Table("x", "ns")
	if len(ht.Rows) != len(want.Rows) {
		t.Fatalf("pooled histogram has %d buckets, merged %d", len(ht.Rows), len(want.Rows))
	}
	for i := range want.Rows {
		if ht.Rows[i].Key != want.Rows[i].Key || ht.Rows[i].Values[2] != want.Rows[i].Values[2] {
			t.Errorf("bucket %d: pooled %v %v, merged %v %v", i, ht.Rows[i].Key, ht.Rows[i].Values, want.Rows[i].Key, want.Rows[i].Values)
		}
	}
}

// TestShardAuto: --shard auto without array variables is an error that
// names them; the example job files exist and use the variables.
func TestShardAuto(t *testing.T) {
	for _, k := range schedulerVars {
		t.Setenv(k, "")
	}
	var out, errb strings.Builder
	if code := run([]string{"sweep", "--shard", "auto", "--set", "seed=1,2", "incast"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "SLURM_ARRAY_TASK_ID") {
		t.Errorf("--shard auto outside a job array: exit %d, %s", code, errb.String())
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	if code := run([]string{"sweep", "--shard", "auto", "--set", "seed=1,2", "incast"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "BESIM_SHARDS") {
		t.Errorf("Kubernetes index without BESIM_SHARDS: exit %d, %s", code, errb.String())
	}
	for file, vars := range map[string][]string{
		"../../bench/batch/slurm-replications.sbatch": {"#SBATCH --array=0-3", "--replications", "SLURM_ARRAY_TASK_ID"},
		"../../bench/batch/k8s-indexed-job.yaml":      {"completionMode: Indexed", "completions: 4", "BESIM_SHARDS", `value: "4"`, "--replications"},
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vars {
			if !strings.Contains(string(b), v) {
				t.Errorf("%s lacks %q", file, v)
			}
		}
	}
}
