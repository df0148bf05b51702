package run

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/schedules"
)

// The environment variables that say which shard a run is, set by the engines that start
// many copies of one command.
const (
	envSlurmID    = "SLURM_ARRAY_TASK_ID"
	envSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	envSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	envSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	envSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	envK8sIndex   = "JOB_COMPLETION_INDEX"
	envShardCount = "MODULO_SHARD_COUNT"
)

// shardOf decides which shard of its file a run takes: --shard K/N, else the engine's task
// index. It returns nil for the whole file, and says where the shard came from.
func shardOf(flag string, count int, getenv func(string) string) (*schedules.Shard, string, error) {
	if flag != "" {
		sh, err := schedules.ParseShard(flag)
		if err != nil {
			return nil, "", fmt.Errorf("--shard: %w", err)
		}
		if count != 0 && count != sh.Count {
			return nil, "", fmt.Errorf("--shard %s and --shard-count %d disagree", flag, count)
		}
		return &sh, "--shard " + flag, nil
	}
	if id := getenv(envSlurmID); id != "" {
		return slurmShard(id, count, getenv)
	}
	if index := getenv(envK8sIndex); index != "" {
		return indexedJobShard(index, count, getenv)
	}
	if count != 0 {
		return nil, "", fmt.Errorf("--shard-count %d needs a shard index: --shard K/N, or an engine's (%s, %s)", count, envSlurmID, envK8sIndex)
	}
	return nil, "", nil
}

// slurmShard reads a Slurm array task's shard: its index from the array's first task, out of
// the array's task count. The array must be a range without gaps (--array=0-15 or 1-16).
func slurmShard(id string, count int, getenv func(string) string) (*schedules.Shard, string, error) {
	vars := map[string]int{}
	for _, name := range []string{envSlurmID, envSlurmCount, envSlurmMin, envSlurmMax, envSlurmStep} {
		v := getenv(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, "", fmt.Errorf("%s=%q is not a number", name, v)
		}
		vars[name] = n
	}
	n, ok := vars[envSlurmCount]
	if !ok {
		return nil, "", fmt.Errorf("%s=%s, but %s is not set: run as a Slurm array job (sbatch --array=0-N)", envSlurmID, id, envSlurmCount)
	}
	first := vars[envSlurmMin]
	if step, ok := vars[envSlurmStep]; ok && step != 1 || vars[envSlurmMax] != 0 && vars[envSlurmMax]-first+1 != n {
		return nil, "", fmt.Errorf("the Slurm array (%s=%d, %s=%d, %s=%d) has gaps: modulo's shards need --array=FIRST-LAST, every index between",
			envSlurmMin, first, envSlurmMax, vars[envSlurmMax], envSlurmCount, n)
	}
	if count != 0 && count != n {
		return nil, "", fmt.Errorf("--shard-count %d, but the Slurm array has %d tasks", count, n)
	}
	sh := schedules.Shard{Index: vars[envSlurmID] - first, Count: n}
	if err := sh.Valid(); err != nil {
		return nil, "", fmt.Errorf("Slurm array task %s=%d of %s=%d from %s=%d: %w", envSlurmID, vars[envSlurmID], envSlurmCount, n, envSlurmMin, first, err)
	}
	return &sh, fmt.Sprintf("the Slurm array task (%s=%d, %s=%d, %s=%d)", envSlurmID, vars[envSlurmID], envSlurmMin, first, envSlurmCount, n), nil
}

// indexedJobShard reads a Kubernetes Indexed Job pod's shard: JOB_COMPLETION_INDEX, out of
// the count that --shard-count or MODULO_SHARD_COUNT gives (the Job's completions).
func indexedJobShard(index string, count int, getenv func(string) string) (*schedules.Shard, string, error) {
	i, err := strconv.Atoi(index)
	if err != nil {
		return nil, "", fmt.Errorf("%s=%q is not a number", envK8sIndex, index)
	}
	from := "--shard-count"
	if count == 0 {
		v := getenv(envShardCount)
		if v == "" {
			return nil, "", fmt.Errorf("%s=%d, but no shard count: set %s to the Job's completions, or give --shard-count", envK8sIndex, i, envShardCount)
		}
		if count, err = strconv.Atoi(v); err != nil {
			return nil, "", fmt.Errorf("%s=%q is not a number", envShardCount, v)
		}
		from = envShardCount
	}
	sh := schedules.Shard{Index: i, Count: count}
	if err := sh.Valid(); err != nil {
		return nil, "", fmt.Errorf("Kubernetes Indexed Job %s=%d of %d: %w", envK8sIndex, i, count, err)
	}
	return &sh, fmt.Sprintf("the Kubernetes Indexed Job (%s=%d, %s=%d)", envK8sIndex, i, from, count), nil
}

// shardRange cuts the schedule file as every shard of the campaign cuts it, and returns the
// shard's part of it.
func shardRange(file string, sh schedules.Shard) (schedules.Range, error) {
	r, f, err := schedules.Open(file)
	if err != nil {
		return schedules.Range{}, err
	}
	defer f.Close()
	ranges, err := schedules.Partition(r.Header.DRM.Model, r.Header.Params, r.Next, sh.Count)
	if err != nil {
		return schedules.Range{}, err
	}
	return ranges[sh.Index], nil
}

// inRange returns the schedules of next that are in rg, counting them from 0 in file order.
func inRange(next func() (schedules.Schedule, error), rg schedules.Range) func() (schedules.Schedule, error) {
	i := 0
	return func() (schedules.Schedule, error) {
		for ; i < rg.First; i++ {
			if _, err := next(); err != nil {
				return schedules.Schedule{}, err
			}
		}
		if i >= rg.End {
			return schedules.Schedule{}, io.EOF
		}
		i++
		return next()
	}
}

// errShardWithIDs says that --ids and a shard exclude each other.
var errShardWithIDs = errors.New("--ids picks schedules by ID, a shard by place in the file: give one of them")

// campaignName names a campaign's directory: the schedule file's name, and a shard's place,
// "slr.shard-02-of-16", numbered so that the shards sort in order.
func campaignName(file string, sh *schedules.Shard) string {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if sh == nil {
		return name
	}
	width := len(strconv.Itoa(sh.Count))
	return fmt.Sprintf("%s.shard-%0*d-of-%d", name, width, sh.Index+1, sh.Count)
}
