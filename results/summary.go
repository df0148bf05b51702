package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// ErrNotCampaign says that a directory holds no campaign's results.
var ErrNotCampaign = errors.New("not a campaign's results directory")

// Summary is a campaign read back: what it ran, each schedule's verdict, and what replaying
// and shrinking found since.
type Summary struct {
	Dir      string
	Campaign Campaign
	Header   schedules.Header
	// Total is how many schedules the campaign has: its schedule file's count, or the model's
	// for a campaign recorded before campaign.json kept the count.
	Total uint64
	// All is every record in the order appended, retried errors included: the campaign's
	// history.
	All []Record
	// Latest is each schedule's holding record (its last), in the order appended.
	Latest []Record
	// Reproductions holds each schedule's latest reproduction: the one that holds.
	Reproductions map[string]Reproduction
	// Shrunk holds each shrunk schedule's shrink, by the ID of the schedule shrunk.
	Shrunk map[string]Shrunk
	// Skipped says which lines of records.jsonl were not records, and were ignored.
	Skipped []string
}

// ReadSummary reads the campaign in dir: campaign.json, records.jsonl, reproductions.jsonl
// and shrunk/.
func ReadSummary(dir string) (*Summary, error) {
	c, err := ReadCampaign(filepath.Join(dir, CampaignFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w: no %s", dir, ErrNotCampaign, CampaignFile)
	}
	if err != nil {
		return nil, err
	}
	s := &Summary{Dir: dir, Campaign: c, Total: c.Schedules}
	if s.Header, err = c.Header(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if s.Total == 0 {
		g, err := aem.NewGraph(s.Header.DRM.Model, s.Header.Params)
		if err != nil {
			return nil, err
		}
		if s.Total, err = g.Count(); err != nil {
			return nil, fmt.Errorf("count %s's schedules: %w", c.DRM, err)
		}
	}
	if s.All, s.Skipped, err = ReadRecordsSkipping(filepath.Join(dir, RecordsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	last := map[string]int{}
	for i, r := range s.All {
		last[r.ID] = i
	}
	for i, r := range s.All {
		if last[r.ID] == i {
			s.Latest = append(s.Latest, r)
		}
	}
	reps, err := ReadReproductions(dir)
	if err != nil {
		return nil, err
	}
	s.Reproductions = map[string]Reproduction{}
	for _, r := range reps {
		s.Reproductions[r.ID] = r
	}
	if s.Shrunk, err = ReadShrunk(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// FlakyLabel is what the results call a failure that its latest replay did not reproduce.
const FlakyLabel = "flaky"

// Flaky tells that schedule id did not pass, yet its latest replay never reproduced that, or,
// when it was not replayed, that another shard's run of it passed.
func (s *Summary) Flaky(id string) bool {
	if r, ok := s.Reproductions[id]; ok {
		return r.Flaky()
	}
	m := s.Campaign.Merged
	return m != nil && m.Flaky[id] != ""
}

// Label is what the results call a record: its verdict, or "flaky" for a non-pass that its
// latest replay did not reproduce once.
func (s *Summary) Label(r Record) string {
	if r.Verdict != oracle.Pass && s.Flaky(r.ID) {
		return FlakyLabel
	}
	return string(r.Verdict)
}

// Counts counts the holding records by label.
type Counts struct {
	oracle.Tally
	Flaky int
}

// Counts counts the holding records by label: a flaky failure counts as flaky, not as fail.
func (s *Summary) Counts() Counts {
	var c Counts
	for _, r := range s.Latest {
		if s.Label(r) == FlakyLabel {
			c.Flaky++
			continue
		}
		c.Add(r.Verdict)
	}
	return c
}

// Done counts the schedules with a verdict that holds: an error is retried by the next run,
// so it does not count.
func (s *Summary) Done() int {
	n := 0
	for _, r := range s.Latest {
		if r.Verdict != oracle.Error {
			n++
		}
	}
	return n
}

// NotPassed returns the holding records that are not passes, in the order appended.
func (s *Summary) NotPassed() []Record {
	var out []Record
	for _, r := range s.Latest {
		if r.Verdict != oracle.Pass {
			out = append(out, r)
		}
	}
	return out
}

// RestoredCount is how many schedules' holding runs restored a shared prefix.
func (s *Summary) RestoredCount() int {
	n := 0
	for _, r := range s.Latest {
		if r.Restored != nil {
			n++
		}
	}
	return n
}

// Durations returns how long each schedule's holding run took, start to verdict.
func (s *Summary) Durations() []time.Duration {
	ds := make([]time.Duration, len(s.Latest))
	for i, r := range s.Latest {
		ds[i] = r.End.Sub(r.Start)
	}
	return ds
}

// Percentile returns the p-th percentile (0 < p <= 1) of ds by the nearest-rank method: the
// smallest value that at least a share p of ds do not exceed. It is 0 for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(ds))
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// WriteText writes the summary `modulo results` prints: what ran, how far it got, the
// verdicts, the time per schedule, and every schedule that did not pass, one line each.
func (s *Summary) WriteText(w io.Writer) error {
	c, h := s.Campaign, s.Header
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "campaign\t%s\n", s.Dir)
	fmt.Fprintf(tw, "\t%s (%s on %s), ops=%d, replicas=%d, schedule file %s\n",
		h.DRM.Name, h.DRM.Title, h.DRM.System, h.Params.Ops, h.Params.Replicas, c.ScheduleFile)
	started := "started " + c.Started.UTC().Format(time.DateTime+" MST")
	if !c.Resumed.IsZero() {
		started += ", last resumed " + c.Resumed.UTC().Format(time.DateTime+" MST")
	}
	fmt.Fprintf(tw, "\tplugin %s %s, server %s, modulo %s, %s\n", c.Plugin, c.PluginVersion, c.ServerVersion, c.Modulo, started)
	if cfg := OneLine(c.PluginConfig); cfg != "" {
		fmt.Fprintf(tw, "\tplugin config: %s\n", cfg)
	}
	if sh := c.Shard; sh != nil {
		fmt.Fprintf(tw, "shard\t%s: schedules %d to %d of the file's %d\n", sh.Shard, sh.First+1, sh.First+int(c.Schedules), sh.FileSchedules)
	}
	if m := c.Merged; m != nil {
		fmt.Fprintf(tw, "merged\t%s\n", m.Describe())
	}
	done := s.Done()
	fmt.Fprintf(tw, "done\t%d of %d schedules (%s)\n", done, s.Total, share(done, s.Total))
	check := string(c.Check)
	if check == "" {
		check = string(oracle.End) + " (the campaign predates the setting)"
	}
	fmt.Fprintf(tw, "check\t%s\n", check)
	n := s.Counts()
	fmt.Fprintf(tw, "verdicts\tpass %d, fail %d, flaky %d, incomplete %d, error %d%s\n", n.Pass, n.Fail, n.Flaky, n.Incomplete, n.Error, n.Apart(" "))
	if classes := s.Classes(); classes != "" {
		fmt.Fprintf(tw, "failed\t%s\n", classes)
	}
	if kinds := s.NotPassedKinds(); kinds != "" {
		fmt.Fprintf(tw, "kinds\t%s\n", kinds)
	}
	if answers := s.Answers(); answers != "" {
		fmt.Fprintf(tw, "answers\t%s\n", answers)
	}
	if n := s.RestoredCount(); n > 0 {
		fmt.Fprintf(tw, "shared\t%d of %d schedules restored a prefix that another schedule's run saved\n", n, len(s.Latest))
	}
	if ds := s.Durations(); len(ds) > 0 {
		fmt.Fprintf(tw, "time\tmedian %v, p90 %v per schedule\n",
			Percentile(ds, 0.5).Round(time.Millisecond), Percentile(ds, 0.9).Round(time.Millisecond))
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(tw, "warning\t%s\n", sk)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	np := s.NotPassed()
	switch {
	case len(np) == 0 && len(s.Latest) == 0:
		_, err := fmt.Fprintf(w, "\nno schedule has a verdict yet\n")
		return err
	case len(np) == 0:
		_, err := fmt.Fprintf(w, "\nevery schedule with a verdict passed\n")
		return err
	}
	groups := s.Groups()
	fmt.Fprintf(w, "\n%d %s did not pass, in %d %s by signature (what their records share; docs/results.md):\n",
		len(np), words.Plural(len(np), "schedule", "schedules"), len(groups), words.Plural(len(groups), "group", "groups"))
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSCHEDULES\tRUNS\tFIRST SEEN\tSHORTEST\tREPRODUCED\tSIGNATURE")
	for i, g := range groups {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s (%d steps)\t%s\t%s\n", i+1, len(g.IDs), g.Runs, g.First.UTC().Format(time.DateTime),
			g.Shortest, g.ShortestSteps, g.Rate(), g.Signature)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nthe %d %s:\n", len(np), words.Plural(len(np), "schedule", "schedules"))
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERDICT\tGROUP\tREPLAYED\tSHRUNK TO\tDETAIL")
	groupOf := GroupNumbers(groups)
	for _, r := range np {
		replayed, shrunk := "-", "-"
		if rep, ok := s.Reproductions[r.ID]; ok {
			replayed = rep.Rate()
		}
		if sh, ok := s.Shrunk[r.ID]; ok && sh.Smallest.ID == r.ID {
			shrunk = "nothing smaller"
		} else if ok {
			shrunk = fmt.Sprintf("%s (%d steps, %s)", sh.Smallest.ID, sh.Smallest.Steps, sh.Rate())
		}
		label := s.Label(r)
		if r.Class != "" {
			label += " (" + string(r.Class) + ")"
		}
		detail := OneLine(oracle.Abbreviate(r.Detail))
		if r.AtEnd != "" {
			detail += " [at the end: " + OneLine(oracle.Abbreviate(r.AtEnd)) + "]"
		}
		if r.Restored != nil {
			detail += " [" + RestoredNote(r) + "]"
		}
		if m := c.Merged; m != nil && m.Flaky[r.ID] != "" {
			detail += " [recorded twice: " + m.Flaky[r.ID] + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, label, groupOf[r.ID], replayed, shrunk, detail)
	}
	return tw.Flush()
}

// RestoredNote says which steps of r were restored from another schedule's run, and, where r's
// verdict quotes a value that run wrote (each value begins with the ID of the schedule whose
// run wrote it), that those values are that run's: a reader otherwise takes a value carrying
// another schedule's ID for a mix-up of modulo's.
func RestoredNote(r Record) string {
	note := fmt.Sprintf("steps 1-%d restored from %s's run", r.Restored.Steps, r.Restored.From)
	if strings.Contains(r.Detail+r.AtEnd, `"`+r.Restored.From+":") {
		note += fmt.Sprintf(`; the values "%s:..." were written in those steps, by that run`, r.Restored.From)
	}
	return note
}

// NotPassedKinds says, for a DRM whose failures take several kinds, how many of the schedules
// that did not pass fail a replica by each kind (NotPassedKindCounts): "the failures
// of the 2 schedules that did not pass, by kind: power-loss 2, partition 2, pause 2". Empty for
// other DRMs and when every schedule passed.
func (s *Summary) NotPassedKinds() string {
	count, read := s.NotPassedKindCounts()
	var parts []string
	for _, f := range aem.Kinds {
		if count[f] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f, count[f]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	np := len(s.NotPassed())
	line := fmt.Sprintf("the failures of the %d %s that did not pass, by kind: %s", np, words.Plural(np, "schedule", "schedules"), strings.Join(parts, ", "))
	if read < np {
		line += fmt.Sprintf(" (read from the %d that kept a failure folder)", read)
	}
	return line
}

// NotPassedKindCounts counts, for a DRM whose failures take several kinds, the schedules that
// did not pass by each kind their failures take, as the DRM realises it (a
// schedule counts once for each), read from their failure folders; read is how many folders
// were read. Nothing for other DRMs.
func (s *Summary) NotPassedKindCounts() (count map[aem.Failure]int, read int) {
	count = map[aem.Failure]int{}
	if len(s.Header.DRM.Kinds()) < 2 {
		return count, 0
	}
	for _, r := range s.NotPassed() {
		sched, _, err := readScheduleText(filepath.Join(s.Dir, FailuresDir, r.ID))
		if err != nil {
			continue // no folder (deleted to save room): not counted
		}
		read++
		taken := map[aem.Failure]bool{}
		for _, t := range sched.Steps {
			for _, f := range t.Failures {
				if k := s.Header.DRM.KindOf(f); slices.Contains(aem.Kinds, k) {
					taken[k] = true
				}
			}
		}
		for f := range taken {
			count[f]++
		}
	}
	return count, read
}

// Classes counts the failed schedules by the check they failed, and says how many of them the
// end alone would have passed: "divergence 3 (2 healed by the end), lost-write 1"; empty
// when none failed.
func (s *Summary) Classes() string {
	count, healed := s.ClassCounts()
	var parts []string
	for _, class := range oracle.Classes {
		if count[class] == 0 {
			continue
		}
		part := fmt.Sprintf("%s %d", class, count[class])
		if healed[class] > 0 {
			part += fmt.Sprintf(" (%d healed by the end)", healed[class])
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// Answers counts what the system answered to the writes that only a minority received, over
// every schedule's holding run: "acknowledged 3, no answer 40 (of 43 writes only a minority
// received)"; empty when no schedule sent one.
func (s *Summary) Answers() string {
	count, total := map[cem.Answer]int{}, 0
	for _, r := range s.Latest {
		for a, n := range r.Answers {
			count[a] += n
			total += n
		}
	}
	var parts []string
	for _, a := range []cem.Answer{cem.Acknowledged, cem.Refused, cem.NoAnswer} {
		if count[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, count[a]))
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%s (of %d %s only a minority received)", strings.Join(parts, ", "), total, words.Plural(total, "write", "writes"))
}

// ClassCounts counts the failed schedules (a flaky one is not failed) by the check they
// failed, and those of them that the end alone would have passed.
func (s *Summary) ClassCounts() (count, healed map[oracle.Class]int) {
	count, healed = map[oracle.Class]int{}, map[oracle.Class]int{}
	for _, r := range s.Latest {
		if s.Label(r) != string(oracle.Fail) {
			continue
		}
		class := r.FailClass()
		count[class]++
		if r.AtEnd == string(oracle.Pass) || strings.HasPrefix(r.AtEnd, string(oracle.Pass)+":") {
			healed[class]++
		}
	}
	return count, healed
}

// OneLine joins the lines of text with "; ", for a column.
func OneLine(text string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

func share(n int, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

// Campaigns returns dir when it is a campaign's results directory, else the campaigns'
// directories right under it, sorted. A dir that does not exist is an error wrapping
// fs.ErrNotExist; one that holds no campaign an error wrapping ErrNotCampaign.
func Campaigns(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, CampaignFile)); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noDirError(dir)
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, CampaignFile)); e.IsDir() && err == nil {
			dirs = append(dirs, sub)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: %w: no %s in it or in its directories", dir, ErrNotCampaign, CampaignFile)
	}
	return dirs, nil
}

// noDirError says that a directory does not exist, in fewer words than fs.PathError.
type noDirError string

func (e noDirError) Error() string        { return string(e) + ": no such directory" }
func (e noDirError) Is(target error) bool { return target == fs.ErrNotExist }
