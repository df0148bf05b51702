package results

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// ShardOf says that a campaign ran one shard of its schedule file (modulo run --shard): the
// file's schedules First to First+Schedules-1 (the campaign's Schedules), as
// schedules.Partition cut them.
type ShardOf struct {
	schedules.Shard
	Partition string `json:"partition"` // schedules.PartitionVersion
	First     int    `json:"first"`
	// FileSchedules is how many schedules the whole file holds.
	FileSchedules uint64 `json:"file_schedules"`
}

// Merged says that a campaign directory was made from shards' (modulo results merge).
type Merged struct {
	When   time.Time     `json:"when"`
	Shards []MergedShard `json:"shards"`
	// Flaky holds the schedules that two shards recorded with different verdicts, by ID: which
	// shard found what.
	Flaky map[string]string `json:"flaky,omitempty"`
}

// MergedShard is one shard's directory as merged.
type MergedShard struct {
	Dir     string          `json:"dir"`
	Shard   schedules.Shard `json:"shard"`
	Records int             `json:"records"` // the records it contributed
}

// Duplicate is a schedule that more than one shard directory recorded.
type Duplicate struct {
	ID string
	// Verdicts are each directory's holding verdict, in the order the directories were given.
	Verdicts []string
	Flaky    bool // the verdicts differ (errors aside): both records are kept
}

// MergeReport says what Merge did.
type MergeReport struct {
	Campaign   Campaign // the merged campaign's
	Records    int      // records written
	Done       int      // schedules with a verdict that holds
	Duplicates []Duplicate
	// Missing counts the schedules of the file that no shard recorded a verdict for, and
	// MissingIDs names them by shard, when the schedule file could be read.
	Missing    uint64
	MissingIDs map[schedules.Shard][]string
	// AbsentShards are the shards that no directory holds.
	AbsentShards []schedules.Shard
	// Dropped names every line of a records file that was not a record, or was cut short.
	Dropped []string
	// Unnamed says why the missing schedules are only counted, when they are.
	Unnamed string
}

// ErrMismatch says that the directories given to Merge are not shards of one campaign.
var ErrMismatch = errors.New("not shards of one campaign")

// shardDir is a shard's directory as read for merging.
type shardDir struct {
	dir      string
	c        Campaign
	records  []Record
	latest   map[string]Record // each schedule's holding record
	reps     []Reproduction
	unlocked func()
}

// Merge writes to dst one campaign directory made of the shards' directories srcs: their
// records (every schedule once; both records of one that two shards found with different
// verdicts, the failing one last, so that it holds and is labelled flaky), failure folders,
// traces, replays and shrinks. It refuses directories that are not shards of one campaign
// (ErrMismatch) and a dst that holds anything but an earlier merge, which it replaces
// whole. scheduleFile, when not empty, is the campaign's schedule file, else the one the
// shards recorded is tried: with it, the missing schedules are named.
func Merge(dst string, srcs []string, scheduleFile string) (*MergeReport, error) {
	if len(srcs) == 0 {
		return nil, fmt.Errorf("merge: no shard directories given")
	}
	shards := make([]*shardDir, 0, len(srcs))
	defer func() {
		for _, s := range shards {
			s.unlocked()
		}
	}()
	rep := &MergeReport{MissingIDs: map[schedules.Shard][]string{}}
	for i, src := range srcs {
		if same, err := sameDir(src, dst); err != nil || same {
			return nil, cmp.Or(err, fmt.Errorf("merge: %s is both a shard and the output", src))
		}
		for _, earlier := range srcs[:i] {
			if same, err := sameDir(src, earlier); err != nil || same {
				return nil, cmp.Or(err, fmt.Errorf("merge: %s is given twice (as %s)", src, earlier))
			}
		}
		s, err := readShardDir(src, rep)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
		if err := sameCampaign(shards[0], s); err != nil {
			return nil, err
		}
	}

	merged := shards[0].c
	merged.Shard, merged.Resumed = nil, time.Time{}
	merged.Schedules = shards[0].c.Shard.FileSchedules
	merged.Merged = &Merged{When: time.Now().UTC()}
	given := map[int]bool{}
	for _, s := range shards {
		given[s.c.Shard.Index] = true
		if s.c.Started.Before(merged.Started) {
			merged.Started = s.c.Started
		}
	}
	for i := range shards[0].c.Shard.Count {
		if !given[i] {
			rep.AbsentShards = append(rep.AbsentShards, schedules.Shard{Index: i, Count: shards[0].c.Shard.Count})
		}
	}

	// Which directory's records each schedule keeps: the first that holds a verdict, or all
	// whose verdicts differ.
	keep := map[string][]int{}
	var ids []string
	for k, s := range shards {
		for _, r := range s.records {
			if _, seen := keep[r.ID]; !seen {
				keep[r.ID] = nil
				ids = append(ids, r.ID)
			}
			if !slices.Contains(keep[r.ID], k) {
				keep[r.ID] = append(keep[r.ID], k)
			}
		}
	}
	for _, id := range ids {
		ks := keep[id]
		if len(ks) == 1 {
			continue
		}
		d := Duplicate{ID: id}
		verdicts := map[oracle.Verdict]bool{}
		for _, k := range ks {
			v := shards[k].latest[id].Verdict
			d.Verdicts = append(d.Verdicts, fmt.Sprintf("%s in shard %s (%s)", v, shards[k].c.Shard.Shard, shards[k].dir))
			if v != oracle.Error {
				verdicts[v] = true
			}
		}
		d.Flaky = len(verdicts) > 1
		rep.Duplicates = append(rep.Duplicates, d)
		var holding []int // the directories whose records are kept, the holding one last
		for _, k := range ks {
			if v := shards[k].latest[id].Verdict; v != oracle.Error && (d.Flaky || len(holding) == 0) {
				holding = append(holding, k)
			}
		}
		if len(holding) == 0 {
			holding = ks[:1]
		}
		slices.SortStableFunc(holding, func(a, b int) int {
			return cmp.Compare(rank(shards[a].latest[id].Verdict), rank(shards[b].latest[id].Verdict))
		})
		keep[id] = holding
		if d.Flaky {
			if merged.Merged.Flaky == nil {
				merged.Merged.Flaky = map[string]string{}
			}
			merged.Merged.Flaky[id] = strings.Join(d.Verdicts, ", ")
		}
	}

	out, err := mergeTarget(dst)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(out.staging, "."+filepath.Base(out.dir)+".merging-*")
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(tmp)
	// A schedule is done when the record that holds is not an error, which is retried.
	done := map[string]bool{}
	for _, id := range ids {
		holding := keep[id][len(keep[id])-1]
		done[id] = shards[holding].latest[id].Verdict != oracle.Error
		if done[id] {
			rep.Done++
		}
	}
	if err := writeMerged(tmp, shards, ids, keep, &merged, rep); err != nil {
		return nil, err
	}
	rep.Campaign = merged
	countMissing(rep, merged, shards[0].c.Shard.Count, done, scheduleFile)
	if err := out.place(tmp); err != nil {
		return nil, err
	}
	return rep, nil
}

// rank orders a flaky schedule's records: passes first, so that a failure holds.
func rank(v oracle.Verdict) int {
	if v == oracle.Pass {
		return 0
	}
	return 1
}

// readShardDir reads a shard's campaign and records; its records file is locked shared, so
// that a shard still running (which holds it exclusively) is refused.
func readShardDir(dir string, rep *MergeReport) (*shardDir, error) {
	c, err := ReadCampaign(filepath.Join(dir, CampaignFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("merge: %s: %w: no %s", dir, ErrNotCampaign, CampaignFile)
	}
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if c.Shard == nil {
		return nil, fmt.Errorf("merge: %s: %w: it ran the whole schedule file, not a shard (modulo run --shard K/N)", dir, ErrMismatch)
	}
	s := &shardDir{dir: dir, c: c, latest: map[string]Record{}, unlocked: func() {}}
	path := filepath.Join(dir, RecordsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if err := lockRecords(f, syscall.LOCK_SH, dir+" is in use by a modulo run: merge when it has ended"); err != nil {
		f.Close()
		return nil, fmt.Errorf("merge: %w", err)
	}
	s.unlocked = func() { f.Close() }
	good, dropped, err := readRecords(path, func(r *Record) {
		s.records = append(s.records, *r)
		s.latest[r.ID] = *r
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("merge: %w", err)
	}
	rep.Dropped = append(rep.Dropped, dropped...)
	if fi, err := f.Stat(); err == nil && fi.Size() > good {
		rep.Dropped = append(rep.Dropped, fmt.Sprintf("%s:%d: cut short (its run was killed while writing it), dropped",
			path, len(s.records)+len(dropped)+1))
	}
	if s.reps, err = ReadReproductions(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("merge: %w", err)
	}
	return s, nil
}

// sameCampaign says how shard s differs from shard first, as ErrMismatch.
func sameCampaign(first, s *shardDir) error {
	a, b := first.c, s.c
	var diff string
	switch {
	case a.DRM != b.DRM || a.Ops != b.Ops || a.Replicas != b.Replicas:
		diff = fmt.Sprintf("%s ops=%d replicas=%d, not %s ops=%d replicas=%d", b.DRM, b.Ops, b.Replicas, a.DRM, a.Ops, a.Replicas)
	case a.ScheduleSHA256 != b.ScheduleSHA256:
		diff = fmt.Sprintf("schedule file %s (SHA-256 %.12s), not %s (SHA-256 %.12s)", b.ScheduleFile, b.ScheduleSHA256, a.ScheduleFile, a.ScheduleSHA256)
	case a.Shard.Count != b.Shard.Count:
		diff = fmt.Sprintf("shard %s of %d shards, not of %d", b.Shard.Shard, b.Shard.Count, a.Shard.Count)
	case a.Shard.Partition != b.Shard.Partition:
		diff = fmt.Sprintf("shards cut by partition %s, not %s", b.Shard.Partition, a.Shard.Partition)
	default:
		diff = configDiffers(b, a)
	}
	if diff == "" {
		return nil
	}
	return fmt.Errorf("merge: %w: %s ran %s (as %s did)", ErrMismatch, s.dir, diff, first.dir)
}

// writeMerged writes the merged campaign into dir.
func writeMerged(dir string, shards []*shardDir, ids []string, keep map[string][]int, c *Campaign, rep *MergeReport) error {
	var lines []byte
	contributed := make([]int, len(shards))
	add := func(k int, r Record) error {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("merge: record %s: %w", r.ID, err)
		}
		lines = append(append(lines, b...), '\n')
		rep.Records++
		contributed[k]++
		return nil
	}
	flaky := func(id string) bool { return c.Merged.Flaky[id] != "" }
	// Records in the shards' order, each shard's in its own; a flaky schedule's at the end.
	for k, s := range shards {
		for _, r := range s.records {
			if slices.Contains(keep[r.ID], k) && !flaky(r.ID) {
				if err := add(k, r); err != nil {
					return err
				}
			}
		}
	}
	for _, id := range ids {
		if !flaky(id) {
			continue
		}
		for _, k := range keep[id] {
			for _, r := range shards[k].records {
				if r.ID == id {
					if err := add(k, r); err != nil {
						return err
					}
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, RecordsFile), lines, 0o644); err != nil {
		return fmt.Errorf("merge: %w", err)
	}

	var reps []byte
	for _, id := range ids {
		s := shards[keep[id][len(keep[id])-1]] // the holding record's shard has the folders
		for _, p := range []string{filepath.Join(FailuresDir, id), filepath.Join(TracesDir, id+".txt"),
			filepath.Join(ReplaysDir, id), filepath.Join(ShrunkDir, id)} {
			if err := copyIfExists(filepath.Join(s.dir, p), filepath.Join(dir, p)); err != nil {
				return err
			}
		}
		for _, r := range s.reps {
			if r.ID == id {
				b, err := json.Marshal(r)
				if err != nil {
					return fmt.Errorf("merge: reproduction of %s: %w", id, err)
				}
				reps = append(append(reps, b...), '\n')
			}
		}
	}
	if len(reps) > 0 {
		if err := os.WriteFile(filepath.Join(dir, ReproductionsFile), reps, 0o644); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	for k, s := range shards {
		c.Merged.Shards = append(c.Merged.Shards, MergedShard{Dir: s.dir, Shard: s.c.Shard.Shard, Records: contributed[k]})
	}
	return writeCampaign(filepath.Join(dir, CampaignFile), *c)
}

func copyIfExists(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := fsutil.CopyTree(src, dst); err != nil {
		return fmt.Errorf("merge: copy %s: %w", src, err)
	}
	return nil
}

// countMissing counts the schedules of merged campaign c, cut into n shards, that are not
// done, and names them by shard when the schedule file is at hand.
func countMissing(rep *MergeReport, c Campaign, n int, done map[string]bool, scheduleFile string) {
	rep.Missing = c.Schedules - uint64(rep.Done)
	if rep.Missing == 0 {
		return
	}
	ranges, all, err := partitionFile(cmp.Or(scheduleFile, c.ScheduleFile), c.ScheduleSHA256, n)
	if err != nil {
		rep.Unnamed = err.Error()
		return
	}
	for k, r := range ranges {
		for _, s := range all[r.First:r.End] {
			if !done[s.ID] {
				sh := schedules.Shard{Index: k, Count: len(ranges)}
				rep.MissingIDs[sh] = append(rep.MissingIDs[sh], s.ID)
			}
		}
	}
}

// partitionFile reads the campaign's schedule file, checks that it is the campaign's, and
// cuts it as the shards were cut.
func partitionFile(file, sha256 string, n int) ([]schedules.Range, []schedules.Schedule, error) {
	sum, err := fsutil.FileSHA256(file)
	if err != nil {
		return nil, nil, fmt.Errorf("the schedule file %s cannot be read (--schedules FILE names it): %w", file, err)
	}
	if sum != sha256 {
		return nil, nil, fmt.Errorf("%s is not the shards' schedule file (SHA-256 %.12s, not %.12s)", file, sum, sha256)
	}
	h, all, err := schedules.ReadAll(file)
	if err != nil {
		return nil, nil, err
	}
	ranges, err := schedules.Partition(h.DRM.Model, h.Params, schedules.Stream(all), n)
	return ranges, all, err
}

// sameDir tells whether a and b are one directory (b need not exist).
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, fmt.Errorf("merge: %w", err)
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("merge: %w", err)
	}
	return os.SameFile(fa, fb), nil
}

// mergeOutput is where a merge goes: dir, the output directory with its symbolic links
// followed (a link is kept, and what it names is written), and staging, the directory in which
// the merge is built before it is moved into place: dir itself when it is an empty directory,
// so that the move never crosses file systems (dir may be a mount point), else dir's parent.
type mergeOutput struct {
	dir, staging string
	into         placement
}

// placement is how a merge is put in its output directory, as mergeTarget found it.
type placement int

const (
	intoNew   placement = iota // dir does not exist: the merge is renamed to it
	intoEmpty                  // dir is an empty directory, the user's: kept, and filled
	intoMerge                  // dir holds an earlier merge, a merge's own: replaced whole
)

// mergeTarget checks the output directory dst: it must not exist, be an empty directory, or
// hold an earlier merge, which is replaced whole.
func mergeTarget(dst string) (mergeOutput, error) {
	if dst == "-" {
		return mergeOutput{}, fmt.Errorf("merge: the output is a campaign directory, not a stream: name a directory, not -")
	}
	dir, err := filepath.EvalSymlinks(dst)
	if errors.Is(err, fs.ErrNotExist) {
		dir = filepath.Clean(dst)
		parent := filepath.Dir(dir)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return mergeOutput{}, fmt.Errorf("merge: %w", err)
		}
		return mergeOutput{dir: dir, staging: parent, into: intoNew}, nil
	}
	if err != nil {
		return mergeOutput{}, fmt.Errorf("merge: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return mergeOutput{}, fmt.Errorf("merge: %w", err)
	}
	if !st.IsDir() {
		return mergeOutput{}, fmt.Errorf("merge: %s is not a directory: the output is a campaign directory", dst)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return mergeOutput{}, fmt.Errorf("merge: %w", err)
	}
	if len(entries) == 0 {
		return mergeOutput{dir: dir, staging: dir, into: intoEmpty}, nil
	}
	prev, err := ReadCampaign(filepath.Join(dir, CampaignFile))
	if err != nil || prev.Merged == nil {
		return mergeOutput{}, fmt.Errorf("merge: %s holds something other than a merge: choose another output directory", dst)
	}
	if !prev.Resumed.IsZero() {
		return mergeOutput{}, fmt.Errorf("merge: %s was resumed by modulo run after it was merged, and its new records would be lost: choose another output directory", dst)
	}
	return mergeOutput{dir: dir, staging: filepath.Dir(dir), into: intoMerge}, nil
}

// place moves the merged directory tmp into o.dir. An empty directory, which the user made,
// is kept and filled, campaign.json last, so that it is never read as a campaign before it
// holds one; an earlier merge, which a merge made, is swapped out whole.
func (o mergeOutput) place(tmp string) error {
	switch o.into {
	case intoNew:
		return os.Rename(tmp, o.dir)
	case intoEmpty:
		entries, err := os.ReadDir(tmp)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		names := []string{}
		for _, e := range entries {
			if e.Name() != CampaignFile {
				names = append(names, e.Name())
			}
		}
		for _, name := range append(names, CampaignFile) {
			if err := os.Rename(filepath.Join(tmp, name), filepath.Join(o.dir, name)); err != nil {
				return fmt.Errorf("merge: %w", err)
			}
		}
		return nil
	}
	old := tmp + ".old"
	if err := os.Rename(o.dir, old); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := os.Rename(tmp, o.dir); err != nil {
		return errors.Join(fmt.Errorf("merge: %w", err), os.Rename(old, o.dir))
	}
	return os.RemoveAll(old)
}

// Describe says in one line which shards were merged, and when.
func (m *Merged) Describe() string {
	var parts []string
	count := 0
	for _, s := range m.Shards {
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Shard, s.Dir))
		count = s.Shard.Count
	}
	return fmt.Sprintf("%s, from shards of %d: %s", m.When.Format(time.DateTime+" MST"), count, strings.Join(parts, ", "))
}

// Sorted yields the missing schedules' IDs by shard, in the shards' order.
func (r *MergeReport) Sorted() iter.Seq2[schedules.Shard, []string] {
	return func(yield func(schedules.Shard, []string) bool) {
		for _, sh := range slices.SortedFunc(maps.Keys(r.MissingIDs), func(a, b schedules.Shard) int { return cmp.Compare(a.Index, b.Index) }) {
			if !yield(sh, r.MissingIDs[sh]) {
				return
			}
		}
	}
}
