package sweep

import (
	"strings"
	"testing"
)

func TestShardFromEnv(t *testing.T) {
	for _, c := range []struct {
		env   map[string]string
		want  Shard
		found bool
		err   string
	}{
		{map[string]string{}, Shard{}, false, ""},
		{map[string]string{"BESIM_SHARD": "2/5", "SLURM_ARRAY_TASK_ID": "0"}, Shard{2, 5}, true, ""},
		{map[string]string{"BESIM_SHARD": "5/5"}, Shard{}, true, "want i/n"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, Shard{3, 4}, true, ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}, Shard{3, 4}, true, ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "13", "SLURM_ARRAY_TASK_STEP": "4"}, Shard{2, 4}, true, ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, Shard{}, true, "neither $SLURM_ARRAY_TASK_COUNT"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4"}, Shard{}, true, "index 9 of 4"},
		{map[string]string{"SGE_TASK_ID": "undefined", "SGE_TASK_FIRST": "undefined"}, Shard{}, false, ""},
		{map[string]string{"SGE_TASK_ID": "5", "SGE_TASK_FIRST": "1", "SGE_TASK_LAST": "7", "SGE_TASK_STEPSIZE": "2"}, Shard{2, 4}, true, ""},
		{map[string]string{"SGE_TASK_ID": "2", "SGE_TASK_FIRST": "1", "SGE_TASK_LAST": "7", "SGE_TASK_STEPSIZE": "2"}, Shard{}, true, "multiple of STEPSIZE"},
		{map[string]string{"PBS_ARRAY_INDEX": "3", "BESIM_SHARDS": "4"}, Shard{3, 4}, true, ""},
		{map[string]string{"PBS_ARRAY_INDEX": "3"}, Shard{}, true, "BESIM_SHARDS"},
		{map[string]string{"LSB_JOBINDEX": "0", "BESIM_SHARDS": "4"}, Shard{}, false, ""},
		{map[string]string{"LSB_JOBINDEX": "4", "BESIM_SHARDS": "4"}, Shard{3, 4}, true, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "BESIM_SHARDS": "4"}, Shard{0, 4}, true, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "x", "BESIM_SHARDS": "4"}, Shard{}, true, "non-negative integer"},
	} {
		s, from, found, err := ShardFromEnv(func(k string) string { return c.env[k] })
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.env, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.env, err)
		case s != c.want || found != c.found || found != (from != ""):
			t.Errorf("%v: shard %v found %v from %q; want %v %v", c.env, s, found, from, c.want, c.found)
		}
	}
}
