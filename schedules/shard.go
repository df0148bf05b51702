package schedules

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/aem"
)

// PartitionVersion names Partition's algorithm. Shards cut by another version are not parts
// of one campaign, so a shard records it and a merge compares it.
const PartitionVersion = "prefix-weight/1"

// Shard is one of the parts a campaign is cut into, to run on many machines.
type Shard struct {
	Index int `json:"index"` // 0-based, as the engines count their tasks
	Count int `json:"count"`
}

// ParseShard reads "k/n": shard k of n, k from 1 to n, as --shard takes it.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want K/N, shard K of N, as in 1/4", s)
	}
	sh := Shard{Index: ki - 1, Count: ni}
	return sh, sh.Valid()
}

// Valid says whether the shard is one of its count.
func (s Shard) Valid() error {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %s: K must be from 1 to N, and N at least 1", s)
	}
	return nil
}

// String is "k/n", k counted from 1.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index+1, s.Count) }

// Range is a shard's part of a file: the schedules First to End-1, counted from 0 in file
// order, and the work they are expected to take.
type Range struct {
	First, End int
	Work       int64
}

// Len is how many schedules the range holds.
func (r Range) Len() int { return r.End - r.First }

// Partition cuts the schedules that next returns, in file order, into n ranges, one per shard,
// such that every schedule is in exactly one. It is a pure function of the schedules and n
// (integer arithmetic, no randomness), so every machine computes the same shards.
//
// Work is counted as Plan counts it for one worker sharing prefixes: the steps a schedule
// executes beyond the deepest restore point it shares with the schedule before it, plus one
// for every cluster started afresh. Each boundary aims at an equal share of the work and goes
// where it costs least: its distance from that aim plus what it adds by splitting a prefix
// that schedules share (the shard after it runs the prefix again). So a boundary splits a
// shared prefix only where the imbalance it avoids is larger than the prefix, and the shards
// differ from an equal share by at most about two schedules' work.
func Partition(m aem.Model, p aem.Params, next func() (Schedule, error), n int) ([]Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("partition into %d shards: need at least 1", n)
	}
	// cum[i] is the work of the schedules before i; fresh[i] schedule i's work when a shard
	// starts with it.
	cum := []int64{0}
	var fresh []int64
	var prev Schedule
	var prevPoints []int
	finder := pointFinder{model: m, params: p}
	for {
		s, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		_, shared := sharedPoints(prev.Steps, prevPoints, s.Steps)
		w := int64(len(s.Steps) - shared)
		if shared == 0 {
			w++
		}
		cum = append(cum, cum[len(cum)-1]+w)
		fresh = append(fresh, int64(len(s.Steps))+1)
		prev, prevPoints = s, finder.points(s.Steps)
	}

	total := cum[len(cum)-1]
	cuts := make([]int, n+1)
	cuts[n] = len(fresh)
	for j := 1; j < n; j++ {
		target := total * int64(j) / int64(n)
		cuts[j] = max(cheapestCut(cum, fresh, target), cuts[j-1])
	}
	ranges := make([]Range, n)
	for j := range ranges {
		r := Range{First: cuts[j], End: cuts[j+1]}
		if r.Len() > 0 {
			r.Work = cum[r.End] - cum[r.First+1] + fresh[r.First]
		}
		ranges[j] = r
	}
	return ranges, nil
}

// cheapestCut returns the place (a schedule's index, or len(fresh) for the end) where a
// boundary costs least: the distance of the work before it from target, plus the work that
// the boundary adds by splitting a shared prefix (the shard after it runs that prefix again);
// the first of equals.
func cheapestCut(cum, fresh []int64, target int64) int {
	best, bestCost := 0, abs(target)
	for i := 1; i < len(cum); i++ {
		cost := abs(cum[i] - target)
		if i < len(fresh) {
			cost += fresh[i] - (cum[i+1] - cum[i])
		}
		if cost < bestCost {
			best, bestCost = i, cost
		}
	}
	return best
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
