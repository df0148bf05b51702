// Package results keeps what a campaign found: one directory per campaign, holding
//
//	campaign.json        what was run: DRM, parameters, schedule file and its SHA-256, plugin
//	                     and server versions, when it started
//	records.jsonl        one JSON record per schedule run, appended as each ends
//	failures/<ID>/       for every schedule that did not pass: the schedule, the actions the
//	                     plugin took, each replica's data, the servers' logs and cluster directory
//	passes/<ID>/         the same for a schedule that passed in a run asked to keep it (replay
//	                     --keep)
//	work/w<k>/           worker k's cluster directory while a schedule runs
//	reproductions.jsonl  one record per replay of a recorded schedule (modulo replay, shrink)
//	replays/<ID>/        the runs of each replay, each a results directory of its own
//	shrunk/<ID>/         the smallest failing schedule a shrink found, and its runs
//
// Records survive a kill at any moment: each is one write(2) to a file opened with O_APPEND,
// followed by fsync, and a record is appended only after its failure folder is complete. A kill
// during the write can leave a torn last line; readers ignore it and Open cuts it off before
// appending. Running a campaign again resumes it: Store.Recorded tells which schedules already
// have a verdict from the same DRM, plugin and server. An error verdict says nothing about the
// system under test (a busy port, a dead plugin), so it does not count: the next run retries
// the schedule and appends a new record, and a schedule's last record is the one that holds.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
)

// Names of the files of a results directory.
const (
	CampaignFile = "campaign.json"
	RecordsFile  = "records.jsonl"
	FailuresDir  = "failures"
	WorkDir      = "work"
)

// Campaign describes a campaign: what was run, with what.
type Campaign struct {
	DRM            string    `json:"drm"`
	Ops            int       `json:"ops"`
	Replicas       int       `json:"replicas"`
	ScheduleFile   string    `json:"schedule_file"`
	ScheduleSHA256 string    `json:"schedule_sha256"`
	Plugin         string    `json:"plugin"`
	PluginVersion  string    `json:"plugin_version"`
	ServerVersion  string    `json:"server_version"`
	Modulo         string    `json:"modulo"`
	Started        time.Time `json:"started"`
	// Schedules is the campaign's total: how many schedules the schedule file holds, or, for
	// a shard, how many of them are the shard's.
	Schedules uint64 `json:"schedules,omitempty"`
	// Shard, for a campaign of one shard of its file, says which.
	Shard *ShardOf `json:"shard,omitempty"`
	// Merged, for a campaign merged from shards, says from which.
	Merged *Merged `json:"merged,omitempty"`
	// PluginConfig is the plugin's table of the configuration, as TOML, so that a replay
	// realises the schedules as the campaign did.
	PluginConfig string `json:"plugin_config,omitempty"`
	// Resumed is when the latest run that resumed the campaign started.
	Resumed time.Time `json:"resumed,omitzero"`
	// Check says when schedules are judged (oracle.EveryConvergence or oracle.End); empty in
	// campaigns older than the setting, which were judged at the end.
	Check oracle.Check `json:"check,omitempty"`
	// BasePort is worker 0's first port, where replay and shrink run their clusters too.
	BasePort int `json:"base_port,omitempty"`
	// StepTimeout is how long a step could take to reach its state (as "1m0s"), which replay
	// and shrink give a step too: a schedule replayed with less could end incomplete where
	// the campaign's run did not. Empty in campaigns older than the field.
	StepTimeout string `json:"step_timeout,omitempty"`
	// Declared, for a DRM that its plugin declares, is the declaration: the campaign directory
	// is then read (results, report, merge, show) where the plugin is not installed.
	Declared *drms.Spec `json:"declared_drm,omitempty"`
}

// FailClass is the class of a failed record: divergence for records older than the classes,
// which knew only divergence and name none.
func (r Record) FailClass() oracle.Class {
	if r.Class == "" {
		return oracle.Diverged
	}
	return r.Class
}

// Record is what one schedule's run found.
type Record struct {
	ID      string         `json:"id"`
	DRM     string         `json:"drm"`
	Verdict oracle.Verdict `json:"verdict"`
	// Detail says why a schedule did not pass, in one line.
	Detail string `json:"detail,omitempty"`
	// Class is the check a failed schedule failed; Step the 1-based step after which it was
	// seen, 0 for the end of the schedule.
	Class oracle.Class `json:"class,omitempty"`
	Step  int          `json:"step,omitempty"`
	// Difference, for a fail of class divergence or lost-write, is each replica's part in it
	// (oracle.Judgement.Difference): what its signature is made of (Signature).
	Difference []oracle.Mark `json:"difference,omitempty"`
	// AtEnd, for a schedule that failed before its end, is what the end alone showed: its
	// verdict and detail ("pass" when a later step healed the failure).
	AtEnd string `json:"at_end,omitempty"`
	// Observations are what the plugin observed after each step, for explaining verdicts.
	Observations []StepObservations `json:"observations,omitempty"`
	// Answers counts what the system answered to the writes that only a minority of the
	// replicas received (cem.Write.Minority) in the steps the run made (a restored prefix's
	// count with the run that saved it), by answer: an acknowledged one is acknowledged for
	// the oracle.
	Answers map[cem.Answer]int `json:"answers,omitempty"`
	// Restored, when the schedule did not start afresh, says which saved prefix it restored.
	Restored *Restored `json:"restored,omitempty"`
	// Departed, for a run that followed a recorded course (replay --follow), says how its
	// observations left that course, after which it was abandoned.
	Departed      string    `json:"departed,omitempty"`
	Plugin        string    `json:"plugin"`
	PluginVersion string    `json:"plugin_version"`
	ServerVersion string    `json:"server_version"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	// Milliseconds spent starting (or restoring) the cluster, realising each step taken (0 for
	// a restored step) and reading the data.
	StartMS float64   `json:"start_ms"`
	StepsMS []float64 `json:"steps_ms"`
	ReadMS  float64   `json:"read_ms"`
}

// Outcome is the record's verdict with its class: "fail (lost-write)", "pass".
func (r Record) Outcome() string {
	if r.Class == "" {
		return string(r.Verdict)
	}
	return fmt.Sprintf("%s (%s)", r.Verdict, r.Class)
}

// Restored says that a schedule's first Steps steps were not run for it: its cluster was
// restored from the files that the run of schedule From saved after them (their digest), the
// same cluster as its own prefix would have left. Its records and failure folder show From's
// actions and observations for those steps. A replay runs from scratch, or (replay
// --from-prefix) from the saved prefix its failure folder keeps (KeptPrefix).
type Restored struct {
	Steps  int    `json:"steps"`
	From   string `json:"from"`
	Digest string `json:"digest"`
}

// StepObservations are what the plugin observed after one step, by replica. Step is 1-based,
// as actions.txt, traces and every message number steps; records.jsonl names it "after_step".
type StepObservations struct {
	Step     int               `json:"after_step"`
	Replicas []cem.Observation `json:"replicas"`
}

// UnmarshalJSON reads the observations of a step as records.jsonl holds them: "after_step", or
// in records written before it a 0-based "step" (kept campaigns, users' own), which a new
// field name tells apart where a campaign.json could not, since a resumed or merged campaign
// mixes records of both.
func (so *StepObservations) UnmarshalJSON(b []byte) error {
	var v struct {
		AfterStep *int              `json:"after_step"`
		Step      *int              `json:"step"`
		Replicas  []cem.Observation `json:"replicas"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch {
	case v.AfterStep != nil:
		so.Step = *v.AfterStep
	case v.Step != nil:
		so.Step = *v.Step + 1
	default:
		return errors.New("observations of no step: neither after_step nor step")
	}
	so.Replicas = v.Replicas
	return nil
}

// ErrOtherCampaign says that a results directory holds another campaign.
var ErrOtherCampaign = errors.New("results directory holds another campaign")

// Store is an open results directory.
type Store struct {
	dir string

	mu      sync.Mutex
	records *os.File
	// recorded holds the verdicts of the schedules recorded by the campaign's DRM, plugin and
	// server versions, but for errors; a later record of an ID replaces an earlier one.
	recorded map[string]oracle.Verdict
	// Skipped says which lines of the records file were not records (a disk that corrupted
	// one, a hand edit): they are left in the file and ignored, and their schedules run again.
	Skipped []string
}

// Open opens or creates the results directory dir for campaign c. A directory holding the
// same DRM, parameters and schedule file (by SHA-256, where both say it) is resumed: its start time is kept, and its records are read so that
// Recorded can tell what is done; a torn last record is cut off. A directory holding another
// campaign is an error wrapping ErrOtherCampaign, one that another Store holds open (another
// modulo run) an error too.
func Open(dir string, c Campaign) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	campaignPath := filepath.Join(dir, CampaignFile)
	prev, err := ReadCampaign(campaignPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case prev.DRM != c.DRM || prev.Ops != c.Ops || prev.Replicas != c.Replicas:
		return nil, fmt.Errorf("%s: %w (%s ops=%d replicas=%d, not %s ops=%d replicas=%d); choose another results directory",
			dir, ErrOtherCampaign, prev.DRM, prev.Ops, prev.Replicas, c.DRM, c.Ops, c.Replicas)
	case prev.ScheduleSHA256 != "" && c.ScheduleSHA256 != "" && prev.ScheduleSHA256 != c.ScheduleSHA256:
		return nil, fmt.Errorf("%s: %w: it ran %s (SHA-256 %s), not %s (SHA-256 %s)%s; choose another results directory",
			dir, ErrOtherCampaign, prev.ScheduleFile, prev.ScheduleSHA256, c.ScheduleFile, c.ScheduleSHA256, changedModel(c.DRM))
	case configDiffers(prev, c) != "":
		return nil, fmt.Errorf("%s: %w: it ran with %s; run with the campaign's configuration, or choose another results directory",
			dir, ErrOtherCampaign, configDiffers(prev, c))
	case shardDiffers(prev.Shard, c.Shard) != "":
		return nil, fmt.Errorf("%s: %w: it ran %s, not %s; choose another results directory",
			dir, ErrOtherCampaign, shardDiffers(prev.Shard, c.Shard), shardDiffers(c.Shard, prev.Shard))
	default:
		c.Resumed, c.Started, c.Merged = c.Started, prev.Started, prev.Merged
	}

	recordsPath := filepath.Join(dir, RecordsFile)
	f, err := os.OpenFile(recordsPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open records: %w", err)
	}
	// Two runs appending to one campaign would run its schedules twice. The lock ends with
	// the process, however it ends.
	if err := lockRecords(f, syscall.LOCK_EX, "results directory "+dir+" is in use by another modulo run"); err != nil {
		f.Close()
		return nil, err
	}
	s := &Store{dir: dir, records: f, recorded: map[string]oracle.Verdict{}}
	good, skipped, err := readRecords(recordsPath, func(r *Record) {
		if r.DRM == c.DRM && r.Plugin == c.Plugin && r.PluginVersion == c.PluginVersion && r.ServerVersion == c.ServerVersion {
			s.remember(r.ID, r.Verdict)
		}
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	s.Skipped = skipped
	// Cut a torn last record off, so that the next one starts a line of its own.
	if fi, err := f.Stat(); err != nil || fi.Size() != good {
		if err := errors.Join(err, f.Truncate(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("cut torn record off %s: %w", recordsPath, err)
		}
	}
	if err := writeCampaign(campaignPath, c); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", campaignPath, err)
	}
	return s, nil
}

// lockRecords takes a records file's lock without waiting: exclusive for the run that appends
// to it, shared for a reader that must not read a campaign still being written. busy says
// what a lock held by another process means.
func lockRecords(f *os.File, how int, busy string) error {
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errors.New(busy)
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// configDiffers says how c's configuration differs from the one campaign prev ran with, or
// "": a campaign's verdicts, and the replays that relabel them, mean something only under one
// plugin, server, plugin configuration (its preset included) and check. A campaign older than
// the check setting was judged at the end.
func configDiffers(prev, c Campaign) string {
	prevCheck := prev.Check
	if prevCheck == "" {
		prevCheck = oracle.End
	}
	switch {
	case prev.Plugin != c.Plugin:
		return fmt.Sprintf("plugin %s, not %s", prev.Plugin, c.Plugin)
	case prev.PluginVersion != c.PluginVersion:
		return fmt.Sprintf("plugin %s version %s, not %s (a plugin built anew is a new version)", prev.Plugin, prev.PluginVersion, c.PluginVersion)
	case prev.ServerVersion != c.ServerVersion:
		return fmt.Sprintf("server %s, not %s", prev.ServerVersion, c.ServerVersion)
	case prev.PluginConfig != c.PluginConfig:
		return fmt.Sprintf("plugin configuration %q, not %q", OneLine(prev.PluginConfig), OneLine(c.PluginConfig))
	case c.Check != "" && prevCheck != c.Check:
		return fmt.Sprintf("check = %q, not %q", prevCheck, c.Check)
	}
	return ""
}

// shardDiffers describes shard a when it is not shard b: "shard 2/4 (partition V)" or "the
// whole schedule file"; "" when they are the same.
func shardDiffers(a, b *ShardOf) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil:
		return "the whole schedule file"
	case b != nil && a.Shard == b.Shard && a.Partition == b.Partition:
		return ""
	}
	return fmt.Sprintf("shard %s (partition %s)", a.Shard, a.Partition)
}

// changedModel explains, for a DRM whose model changed (drms.DRM.Changed), why a file
// generated today differs from one generated before.
func changedModel(drm string) string {
	d, err := drms.Lookup(drm)
	if err != nil || d.Changed == "" {
		return ""
	}
	return fmt.Sprintf(" (%s: a campaign of an older %s file cannot go on with a file generated since)", d.Changed, d.Title)
}

// Dir returns the results directory.
func (s *Store) Dir() string { return s.dir }

// Recorded returns the verdict recorded for schedule id by the campaign's DRM, plugin and
// server versions, if it is not an error.
func (s *Store) Recorded(id string) (oracle.Verdict, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.recorded[id]
	return v, ok
}

// RecordedCount returns how many schedules Recorded knows.
func (s *Store) RecordedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recorded)
}

// Append records r durably: one write of one line, then fsync. It is safe for concurrent use.
func (s *Store) Append(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record %s: %w", r.ID, err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.records.Write(line); err != nil {
		return fmt.Errorf("record %s: %w", r.ID, err)
	}
	if err := s.records.Sync(); err != nil {
		return fmt.Errorf("record %s: sync: %w", r.ID, err)
	}
	s.remember(r.ID, r.Verdict)
	return nil
}

// remember takes a schedule's latest verdict: errors are forgotten, so that they are retried.
func (s *Store) remember(id string, v oracle.Verdict) {
	if v == oracle.Error {
		delete(s.recorded, id)
		return
	}
	s.recorded[id] = v
}

// Close closes the records file.
func (s *Store) Close() error { return s.records.Close() }

// writeCampaign writes campaign.json, atomically.
func writeCampaign(path string, c Campaign) error {
	return fsutil.WriteFile(path, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	})
}

// ReadCampaign reads a campaign.json.
func ReadCampaign(path string) (Campaign, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Campaign{}, err
	}
	var c Campaign
	if err := json.Unmarshal(b, &c); err != nil {
		return Campaign{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ReadRecords reads every complete record of a records file, ignoring a torn last line and
// failing on a line that is not a record.
func ReadRecords(path string) ([]Record, error) {
	rs, skipped, err := ReadRecordsSkipping(path)
	if err == nil && len(skipped) > 0 {
		err = errors.New(skipped[0])
	}
	return rs, err
}

// ReadRecordsSkipping reads every complete record of a records file, ignoring a torn last
// line, and says which lines it skipped because they are not records.
func ReadRecordsSkipping(path string) ([]Record, []string, error) {
	var rs []Record
	_, skipped, err := readRecords(path, func(r *Record) { rs = append(rs, *r) })
	return rs, skipped, err
}

// readRecords calls each with every complete record of path and returns the length of the
// file up to the end of the last one, as readJSONL does.
func readRecords(path string, each func(*Record)) (int64, []string, error) {
	return readJSONL(path, func(b []byte) error {
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.ID == "" {
			return errors.New("no schedule ID")
		}
		each(&r)
		return nil
	}, "record")
}

// readJSONL calls each with every complete line of path, newline cut off, and returns the
// length of the file up to the end of the last one. A last line without its newline is torn:
// a kill cut its write short. A complete line that each rejects is skipped, and said so in
// skipped, naming it and what it should have been: one bad line must not hold up a campaign.
func readJSONL(path string, each func([]byte) error, what string) (good int64, skipped []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return good, skipped, nil // b, if any, is the torn last line
		}
		if err != nil {
			return good, skipped, fmt.Errorf("read %s: %w", path, err)
		}
		if err := each(bytes.TrimSuffix(b, []byte{'\n'})); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s:%d: not a %s, skipped: %v", path, line, what, err))
		}
		good += int64(len(b))
	}
}
