package results

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
)

// Signature is what two non-passes of one bug share, read from a record alone, in words:
//
//   - its outcome, "fail (lost-write)", "incomplete";
//   - for a divergence or a lost write, the shape of the difference (Record.Difference): what
//     each differing replica holds against the acknowledged writes, and which step wrote the
//     write concerned, counted back from the step judged ("lacks an acknowledged write of the
//     last divergence"; for each kind, the nearest such step only), without saying which
//     replica, since the model's replicas are interchangeable;
//   - the sync kinds the plugin observed on those replicas in the step judged ("sync SST");
//   - otherwise (an alarm, an incomplete step, an error), its detail with what changes from
//     run to run taken out (Normalise): numbers, addresses, IDs, and the step's number and
//     transition replaced by its kind.
func Signature(r Record) string {
	sig := string(r.Verdict)
	switch r.Verdict {
	case oracle.Pass:
		return sig
	case oracle.Fail:
		sig += " (" + string(r.FailClass()) + ")"
	}
	if len(r.Difference) == 0 {
		return sig + ": " + detailSignature(r.Detail)
	}
	// Per kind of mark, the write nearest the step judged: one replica that kept the writes of
	// two divergences shows the same bug as one that kept the writes of one.
	nearest := map[oracle.MarkKind]oracle.Mark{}
	replicas := map[int]bool{}
	for _, m := range r.Difference {
		replicas[m.Replica] = true
		if n, ok := nearest[m.What]; !ok || writtenRank(m.Written) < writtenRank(n.Written) {
			nearest[m.What] = m
		}
	}
	var parts []string
	for _, m := range nearest {
		parts = append(parts, m.String())
	}
	slices.Sort(parts)
	sig += ": " + strings.Join(parts, "; ")
	if sync := r.syncAt(replicas); sync != "" {
		sig += "; sync " + sync
	}
	return sig
}

// writtenRank orders Mark.Written from the nearest to the step judged.
func writtenRank(written string) int {
	return slices.Index(oracle.WrittenNearestFirst, written)
}

// syncAt is the sync kinds observed on the given replicas after the step judged (the last step
// for the end), sorted and without repeats: "IST,SST".
func (r Record) syncAt(replicas map[int]bool) string {
	if len(r.Observations) == 0 {
		return ""
	}
	obs := r.Observations[len(r.Observations)-1]
	if r.Step > 0 {
		i := slices.IndexFunc(r.Observations, func(o StepObservations) bool { return o.Step == r.Step })
		if i < 0 {
			return ""
		}
		obs = r.Observations[i]
	}
	var kinds []string
	for _, o := range obs.Replicas {
		if replicas[o.Replica] && o.Fields[cem.ObserveSync] != "" {
			kinds = append(kinds, strings.Split(o.Fields[cem.ObserveSync], ",")...)
		}
	}
	slices.Sort(kinds)
	return strings.Join(slices.Compact(kinds), ",")
}

// maxDetailSignature caps the part of a signature taken from a detail: a record's detail can
// name many keys and quote long log lines, and what tells one failure from another is in its
// start.
const maxDetailSignature = 240

// lastSeen begins what an incomplete step's detail says its last probe saw ("postgres-1 to
// serve (last seen: ... exit status 2)"): how the probe failed at that moment, which differs
// between runs of one failure, where what was awaited does not.
const lastSeen = " (last seen: "

// detailSignature is a detail as a signature holds it: its step as a kind (stepless), without
// what its last probe saw, long values abbreviated, Normalise'd, capped at maxDetailSignature
// runes.
func detailSignature(detail string) string {
	if i := strings.Index(detail, lastSeen); i >= 0 {
		detail = detail[:i]
	}
	s := []rune(compactLines(Normalise(oracle.Abbreviate(stepless(detail)))))
	if len(s) > maxDetailSignature {
		return string(s[:maxDetailSignature]) + "…"
	}
	return string(s)
}

// stepPrefix is how a detail names its step: "step 3 C[0,1]<1,->: ", "after step 2: ".
var stepPrefix = regexp.MustCompile(`^(after )?step \d+( [DC]\S*)?: `)

// stepless replaces the step a detail begins with by the kind of its transition, "at a
// convergence: ", so that one failure in schedules of different lengths reads the same.
func stepless(detail string) string {
	m := stepPrefix.FindStringSubmatch(detail)
	if m == nil {
		return detail
	}
	rest := detail[len(m[0]):]
	switch {
	case strings.HasPrefix(m[2], " D"):
		return "at a divergence: " + rest
	case strings.HasPrefix(m[2], " C"):
		return "at a convergence: " + rest
	}
	return rest
}

// The parts of a line that differ between runs of one failure, in the order Normalise takes
// them out.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	// A log line's time, and the process ID a log prefix puts in brackets, say nothing of
	// what went wrong and take room; a date alone stays (as numbers).
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}([.,]\d+)?( ?(UTC|Z|[+-]\d{2}:?\d{2}))? *(\[\d+\] *)?`), ""},
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "UUID"},
	{regexp.MustCompile(`\b[0-9a-f]{16}\b`), "ID"}, // schedule IDs, in values and paths
	{regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`), "ADDR"},
	{regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`), "0xN"},
	{regexp.MustCompile(`\b[0-9a-fA-F]*\d[0-9a-fA-F]*\b`), "N"}, // numbers, and hex with a digit
	{regexp.MustCompile(`(/[^/\s:'"]+)+/`), "/…/"},              // a path's directories
}

// Normalise takes out of a line what differs between runs of one failure: UUIDs, schedule IDs,
// addresses, numbers (and hexadecimal numbers), the directories of paths, and the time and
// process ID of a log line, keeping the words a person recognises: "mariadb-N exited on its
// own (exit status N) during step N".
func Normalise(line string) string {
	for _, n := range normalisers {
		line = n.re.ReplaceAllString(line, n.with)
	}
	return line
}

// logJoin separates the log lines a detail quotes (kit.ErrorLines, joined).
const logJoin = " | "

// compactLines drops from a detail each quoted log line that repeats the one before it: a
// server that refused three clients while it started logs one line three times, which would
// crowd out the line that says why it exited.
func compactLines(detail string) string {
	var kept []string
	for _, part := range strings.Split(detail, logJoin) {
		// The first line quoted follows the detail's own words: it ends the first part.
		if len(kept) > 0 && strings.HasSuffix(kept[len(kept)-1], part) {
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, logJoin)
}

// Group is the non-passes of a campaign that share a signature: most likely one bug.
type Group struct {
	Signature string
	// IDs are the schedules, in the order their holding records were appended.
	IDs []string
	// Runs counts the independent runs behind them: a schedule whose run restored a prefix
	// another schedule's run saved counts with that run (the first of a chain of restores),
	// since what went wrong in the prefix happened once.
	Runs int
	// First is when the first of them was recorded.
	First time.Time
	// Shortest is the schedule with the fewest steps (the first recorded among equals), the
	// one to replay and read first.
	Shortest      string
	ShortestSteps int
	// Replayed counts the schedules replayed; Reproduced and Repeat sum their latest
	// reproductions' counts; Followed and Made sum, over the replays that followed the recorded
	// course, the runs that followed it and the runs made.
	Replayed, Reproduced, Repeat int
	Followed, Made               int
}

// Rate says how often the group's failure reproduced where measured: "4 of 5 runs (2
// schedules replayed; 5 of 20 runs followed the recorded course)", or "-".
func (g Group) Rate() string {
	if g.Replayed == 0 {
		return "-"
	}
	s := fmt.Sprintf("%d of %d runs (%d %s replayed", g.Reproduced, g.Repeat, g.Replayed, words.Plural(g.Replayed, "schedule", "schedules"))
	if g.Made > 0 {
		s += fmt.Sprintf("; %d of %d runs followed the recorded course", g.Followed, g.Made)
	}
	return s + ")"
}

// Groups groups the holding non-passes by Signature, the largest group first (then the first
// recorded).
func (s *Summary) Groups() []Group {
	origin := map[string]string{}
	for _, r := range s.Latest {
		if r.Restored != nil {
			origin[r.ID] = r.Restored.From
		}
	}
	root := func(id string) string {
		for range len(origin) + 1 {
			from, ok := origin[id]
			if !ok || from == id {
				break
			}
			id = from
		}
		return id
	}
	var groups []*Group
	by := map[string]*Group{}
	runs := map[string]map[string]bool{}
	for _, r := range s.NotPassed() {
		sig := Signature(r)
		g, ok := by[sig]
		if !ok {
			g = &Group{Signature: sig, First: r.End}
			by[sig], runs[sig] = g, map[string]bool{}
			groups = append(groups, g)
		}
		g.IDs = append(g.IDs, r.ID)
		runs[sig][root(r.ID)] = true
		if r.End.Before(g.First) {
			g.First = r.End
		}
		n := s.steps(r)
		if g.Shortest == "" || n < g.ShortestSteps {
			g.Shortest, g.ShortestSteps = r.ID, n
		}
		if rep, ok := s.Reproductions[r.ID]; ok && rep.By == "replay" {
			g.Replayed++
			g.Reproduced += rep.Reproduced
			g.Repeat += rep.Repeat
			if rep.Made > 0 {
				g.Followed += rep.Repeat
				g.Made += rep.Made
			}
		}
	}
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.Runs = len(runs[g.Signature])
		out[i] = *g
	}
	slices.SortStableFunc(out, func(a, b Group) int { return cmp.Compare(len(b.IDs), len(a.IDs)) })
	return out
}

// GroupNumbers numbers each schedule of groups by its group, from 1 in the order given: what
// the text, the JSON and the report print beside each non-pass.
func GroupNumbers(groups []Group) map[string]int {
	n := map[string]int{}
	for i, g := range groups {
		for _, id := range g.IDs {
			n[id] = i + 1
		}
	}
	return n
}

// steps is how many steps r's schedule has: its failure folder's schedule, else the steps
// its record timed.
func (s *Summary) steps(r Record) int {
	if sc, _, err := readScheduleText(s.failureDir(r.ID)); err == nil {
		return len(sc.Steps)
	}
	return len(r.StepsMS)
}

func (s *Summary) failureDir(id string) string {
	return (&Store{dir: s.Dir}).FailureDir(id)
}
