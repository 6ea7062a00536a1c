package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Batch schedulers. ShardFromEnv reads a sweep's shard from the array-job
// variables a batch scheduler sets in each task, so that one job script
// runs shard i/n in task i (`besim sweep --shard auto`, or no --shard at
// all). The first of these that is set decides:
//
//	BESIM_SHARD=i/n                       explicit, any scheduler
//	Slurm job array (sbatch --array)      SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN (default 0),
//	                                      SLURM_ARRAY_TASK_STEP (default 1), and
//	                                      SLURM_ARRAY_TASK_COUNT (else (MAX-MIN)/STEP+1 from SLURM_ARRAY_TASK_MAX):
//	                                      i = (ID-MIN)/STEP
//	Grid Engine array (qsub -t)           SGE_TASK_ID, SGE_TASK_FIRST, SGE_TASK_LAST, SGE_TASK_STEPSIZE
//	                                      (default 1): i = (ID-FIRST)/STEP, n = (LAST-FIRST)/STEP+1;
//	                                      "undefined" (a job that is not an array) counts as unset
//	PBS Pro array (qsub -J)               PBS_ARRAY_INDEX; n from BESIM_SHARDS; i = INDEX - BESIM_SHARD_FIRST (default 0)
//	LSF job array (bsub -J 'name[1-N]')   LSB_JOBINDEX (0, as LSF sets outside arrays, counts as unset);
//	                                      n from BESIM_SHARDS; i = INDEX - BESIM_SHARD_FIRST (default 1)
//	Kubernetes Indexed Job                JOB_COMPLETION_INDEX (0-based); n from BESIM_SHARDS (set it to .spec.completions)
//
// PBS, LSF and Kubernetes do not tell a task how many tasks there are, so
// those need BESIM_SHARDS. An array with gaps (--array=1,5,9 without a
// step) cannot be mapped to 0..n-1 and is refused when an index falls
// outside.
//
// getenv is os.Getenv (a test passes its own). found is false when none
// of the variables is set; from names the variables used.
func ShardFromEnv(getenv func(string) string) (s Shard, from string, found bool, err error) {
	env := func(k string) (string, bool) {
		v := strings.TrimSpace(getenv(k))
		return v, v != "" && v != "undefined"
	}
	num := func(k string, def int, need bool) (int, error) {
		v, ok := env(k)
		if !ok {
			if need {
				return 0, fmt.Errorf("$%s is not set", k)
			}
			return def, nil
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 {
			return 0, fmt.Errorf("$%s=%q: want a non-negative integer", k, v)
		}
		return x, nil
	}
	mk := func(i, n int, from string) (Shard, string, bool, error) {
		if n < 1 || i < 0 || i >= n {
			return Shard{}, from, true, fmt.Errorf("shard from %s: index %d of %d tasks; want 0 <= index < tasks (an array with gaps, or a start the variables do not give?)", from, i, n)
		}
		return Shard{I: i, N: n}, from, true, nil
	}
	fail := func(from string, err error) (Shard, string, bool, error) {
		return Shard{}, from, true, fmt.Errorf("shard from %s: %v", from, err)
	}
	if v, ok := env("BESIM_SHARD"); ok {
		s, err := ParseShard(v)
		if err != nil {
			return Shard{}, "$BESIM_SHARD", true, fmt.Errorf("$BESIM_SHARD=%s: want i/n with 0 <= i < n, e.g. 0/4", v)
		}
		return s, "$BESIM_SHARD", true, nil
	}
	if _, ok := env("SLURM_ARRAY_TASK_ID"); ok {
		from := "Slurm ($SLURM_ARRAY_TASK_ID)"
		id, err := num("SLURM_ARRAY_TASK_ID", 0, true)
		if err != nil {
			return fail(from, err)
		}
		lo, err := num("SLURM_ARRAY_TASK_MIN", 0, false)
		if err != nil {
			return fail(from, err)
		}
		step, err := num("SLURM_ARRAY_TASK_STEP", 1, false)
		if err != nil || step < 1 {
			return fail(from, fmt.Errorf("$SLURM_ARRAY_TASK_STEP: want a positive integer"))
		}
		n, err := num("SLURM_ARRAY_TASK_COUNT", -1, false)
		if err != nil {
			return fail(from, err)
		}
		if n < 0 {
			hi, err := num("SLURM_ARRAY_TASK_MAX", 0, true)
			if err != nil {
				return fail(from, fmt.Errorf("neither $SLURM_ARRAY_TASK_COUNT nor $SLURM_ARRAY_TASK_MAX is set"))
			}
			n = (hi-lo)/step + 1
		}
		if (id-lo)%step != 0 {
			return fail(from, fmt.Errorf("task %d is not MIN %d + a multiple of STEP %d", id, lo, step))
		}
		return mk((id-lo)/step, n, from)
	}
	if _, ok := env("SGE_TASK_ID"); ok {
		from := "Grid Engine ($SGE_TASK_ID)"
		id, err := num("SGE_TASK_ID", 0, true)
		if err != nil {
			return fail(from, err)
		}
		first, err := num("SGE_TASK_FIRST", 0, true)
		if err != nil {
			return fail(from, err)
		}
		last, err := num("SGE_TASK_LAST", 0, true)
		if err != nil {
			return fail(from, err)
		}
		step, err := num("SGE_TASK_STEPSIZE", 1, false)
		if err != nil || step < 1 {
			return fail(from, fmt.Errorf("$SGE_TASK_STEPSIZE: want a positive integer"))
		}
		if (id-first)%step != 0 {
			return fail(from, fmt.Errorf("task %d is not FIRST %d + a multiple of STEPSIZE %d", id, first, step))
		}
		return mk((id-first)/step, (last-first)/step+1, from)
	}
	indexed := func(from, k string, first int) (Shard, string, bool, error) {
		idx, err := num(k, 0, true)
		if err != nil {
			return fail(from, err)
		}
		if first, err = num("BESIM_SHARD_FIRST", first, false); err != nil {
			return fail(from, err)
		}
		n, err := num("BESIM_SHARDS", 0, true)
		if err != nil {
			return fail(from, fmt.Errorf("%v (this scheduler does not say how many tasks there are: set BESIM_SHARDS to the array's size)", err))
		}
		return mk(idx-first, n, from)
	}
	if _, ok := env("PBS_ARRAY_INDEX"); ok {
		return indexed("PBS Pro ($PBS_ARRAY_INDEX)", "PBS_ARRAY_INDEX", 0)
	}
	if v, ok := env("LSB_JOBINDEX"); ok && v != "0" {
		return indexed("LSF ($LSB_JOBINDEX)", "LSB_JOBINDEX", 1)
	}
	if _, ok := env("JOB_COMPLETION_INDEX"); ok {
		return indexed("Kubernetes Indexed Job ($JOB_COMPLETION_INDEX)", "JOB_COMPLETION_INDEX", 0)
	}
	return Shard{}, "", false, nil
}
