package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// timeline is a schedule drawn as the paper's Figure 2 draws one: a row per replica, a
// column per step (the start first), each cell saying whether the replica is online after
// the step, what the step did to it (writes received, failed, resynced), what the plugin
// observed of it (its role and epoch, its position, how it was resynced) and its link. It is
// an HTML table, so that a cell grows to hold every line it has, however many.
//
// Two marks say where to look first: the step after which the failing check saw the failure
// (the record's class and step), and the first convergence after which replicas that the
// model says have converged were observed at different epochs or positions.
type timeline struct {
	Columns []column
	Rows    []row
	// Seen is the column at which the failing check saw the failure, Parted the first at which
	// the observations parted; 0 for none (column 0 is the start, which is never marked).
	Seen, Parted int
}

type column struct {
	Label string // "start", "step 3"
	Text  string // the transition
	// Marks say why the column is marked, a line each: "failing check: divergence".
	Marks []columnMark
	// Class is the column's marks as classes of its header and cells: "parted seen".
	Class string
}

type columnMark struct {
	Class string // markSeen or markParted
	Text  string
}

type row struct {
	Replica int
	Label   string
	Cells   []cell
}

type cell struct {
	// State is online, offline or crashed: the replica after the step.
	State string
	// Class is the column's mark.
	Class string
	// Events say what the step did to the replica, a line each: "+2 writes", "fails",
	// "recovers", "resyncs <- 0".
	Events []string
	// Role, Epoch and Position are what the plugin observed of the replica after the step,
	// "" where it did not; EpochApart and PositionApart say that the replica's differs from
	// that of a replica the model says it has converged with.
	Role, Epoch, Position     string
	EpochApart, PositionApart bool
	// Sync is how the replica's server says it was resynced since the last step, each kind
	// once with its count: "INVALID-RECORD ×3", "STREAM ×2".
	Sync []string
	// Note is its state after the step: its abstract version and its replication source;
	// Server the server that realises it, where first known or changed.
	Note   []string
	Server string
	Title  string // tooltip: the state and the concrete actions on the replica
}

// The marks of a timeline's columns, as classes.
const (
	markSeen   = "seen"
	markParted = "parted"
)

// newTimeline draws schedule s of header h that record rec ran; actions are the concrete
// actions the plugin took, by step, as far as the run got.
func newTimeline(h schedules.Header, s schedules.Schedule, actions []results.StepActions, rec results.Record) (*timeline, error) {
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return nil, err
	}
	nodes, err := g.Follow(s.Steps)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	states := []aem.State{g.Root().State}
	for _, n := range nodes {
		states = append(states, n.State)
	}
	n := h.Params.Replicas
	tl := &timeline{}
	for j := range states {
		c := column{Label: "start", Text: "initial state"}
		if j > 0 {
			c.Label, c.Text = fmt.Sprintf("step %d", j), s.Steps[j-1].String()
		}
		tl.Columns = append(tl.Columns, c)
	}
	servers := serversOf(actions, n, len(states))
	for i := range n {
		r := row{Replica: i, Label: fmt.Sprintf("replica %d", i)}
		for j, st := range states {
			c := cell{State: onlineState(failedAs(h.DRM, &st, i), st.On[i])}
			var acts []string
			if j > 0 {
				c.Events = events(&s.Steps[j-1], &states[j-1], &st, i, failedAs(h.DRM, &st, i))
				acts = replicaActions(actions, j-1, i)
				if o := observed(rec.Observations, j, i); o != nil {
					c.Role, c.Epoch, c.Position = o[cem.ObserveRole], epochText(o[cem.ObserveEpoch]), o[cem.ObservePosition]
					c.Sync = syncText(o[cem.ObserveSync])
					if o[cem.ObserveNetwork] == cem.CutOff {
						c.Events = append(c.Events, "partitioned: cut off from its peers")
					}
					acts = append(acts, "observed: "+fieldsText(o))
				}
			}
			c.Note = note(&st, i)
			// Which server realises the abstract replica, where it is first known or changes.
			if srv := servers[j][i]; srv != "" && (j == 0 || srv != servers[j-1][i]) {
				c.Server = srv
			}
			c.Title = fmt.Sprintf("replica %d after %s: %s, %s", i, strings.ToLower(tl.Columns[j].Label), c.State, strings.Join(c.Note, ", "))
			if c.Server != "" {
				c.Title += " · " + c.Server
			}
			if len(c.Events) > 0 {
				c.Title += "\n" + strings.Join(c.Events, ", ")
			}
			if len(acts) > 0 {
				c.Title += "\nactions:\n" + strings.Join(acts, "\n")
			}
			r.Cells = append(r.Cells, c)
		}
		tl.Rows = append(tl.Rows, r)
	}
	tl.markParted(s.Steps, states)
	tl.markSeen(rec)
	return tl, nil
}

// markSeen marks the column at which record r's failing check saw the failure: the step it
// names, or the last for a failure seen at the end, after the last step.
func (tl *timeline) markSeen(r results.Record) {
	last := len(tl.Columns) - 1
	if r.Verdict != oracle.Fail || r.Step > last || last == 0 {
		return
	}
	tl.Seen = r.Step
	text := "failing check: " + string(r.FailClass())
	if r.Step == 0 {
		tl.Seen, text = last, "failing check, at the end: "+string(r.FailClass())
	}
	tl.mark(tl.Seen, markSeen, text)
}

// markParted finds the first convergence after which replicas that the model says have
// converged (oracle.Promised) were observed at different epochs or positions, and marks it;
// at every convergence it marks the cells whose epoch or position is not their group's most
// common one (each of a group's cells where no one value is the most common). A replica not
// observed, or without the field, is left out of the comparison.
func (tl *timeline) markParted(steps []aem.Transition, states []aem.State) {
	for j := 1; j < len(states); j++ {
		if steps[j-1].Kind == aem.Divergence {
			continue // the model's replicas part there by design
		}
		group := oracle.Promised(&states[j])
		epochs := tl.markApart(j, group, func(c *cell) (string, *bool) { return c.Epoch, &c.EpochApart })
		positions := tl.markApart(j, group, func(c *cell) (string, *bool) { return c.Position, &c.PositionApart })
		if (epochs || positions) && tl.Parted == 0 {
			tl.Parted = j
			tl.mark(j, markParted, "replicas part")
		}
	}
}

// markApart compares, in column j, a field of the cells of each group of replicas that group
// says converge, sets the flag that field returns with the value of each cell apart from its
// group, and says whether any was.
func (tl *timeline) markApart(j int, group []int, field func(*cell) (string, *bool)) bool {
	count := map[int]map[string]int{} // group: the values its replicas were observed at, counted
	for i, g := range group {
		if v, _ := field(&tl.Rows[i].Cells[j]); g != oracle.NotCompared && v != "" {
			if count[g] == nil {
				count[g] = map[string]int{}
			}
			count[g][v]++
		}
	}
	found := false
	for i, g := range group {
		v, apart := field(&tl.Rows[i].Cells[j])
		if g == oracle.NotCompared || v == "" || len(count[g]) < 2 {
			continue
		}
		for w, n := range count[g] {
			if w != v && n >= count[g][v] { // another value as common as v, or more
				*apart, found = true, true
			}
		}
	}
	return found
}

// mark marks column j, its header and its cells, as class for the reason text.
func (tl *timeline) mark(j int, class, text string) {
	c := &tl.Columns[j]
	c.Marks = append(c.Marks, columnMark{Class: class, Text: text})
	c.Class = strings.TrimSpace(c.Class + " " + class)
	for i := range tl.Rows {
		tl.Rows[i].Cells[j].Class = c.Class
	}
}

// epochText names an observed epoch: a plugin that says what its epoch is ("timeline 2")
// is shown as it says, a bare number as cem names the field ("epoch 3").
func epochText(e string) string {
	if e == "" || strings.Trim(e, "0123456789") != "" {
		return e
	}
	return cem.ObserveEpoch + " " + e
}

// syncText shortens an observed sync field, the kinds of the lines a server logged in order
// ("INVALID-RECORD,INVALID-RECORD,STREAM,INVALID-RECORD,STREAM"), to each kind once, in the
// order first logged, with its count where more than one: "INVALID-RECORD ×3", "STREAM ×2".
func syncText(sync string) []string {
	if sync == "" {
		return nil
	}
	var kinds []string
	count := map[string]int{}
	for _, k := range strings.Split(sync, ",") {
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	for i, k := range kinds {
		if count[k] > 1 {
			kinds[i] = fmt.Sprintf("%s ×%d", k, count[k])
		}
	}
	return kinds
}

// serversOf says which server realised each abstract replica after each step (servers[j][i],
// j = 0 for the start), from the actions, which name the server first ("zookeeper-1: ..."):
// a quorum model's plugin may map an abstract replica to another server at a divergence. A
// replica that no action has named yet has "".
func serversOf(actions []results.StepActions, n, columns int) [][]string {
	servers := make([][]string, columns)
	for j := range servers {
		servers[j] = make([]string, n)
		if j > 0 {
			copy(servers[j], servers[j-1])
		}
		for _, st := range actions {
			if st.Step != j-1 {
				continue
			}
			for _, a := range st.Actions {
				name, _, ok := strings.Cut(a.What, ": ")
				if ok && a.Replica >= 0 && a.Replica < n && !strings.Contains(name, " ") {
					servers[j][a.Replica] = name
				}
			}
		}
	}
	return servers
}

// observed returns what the plugin observed of replica i after step (1-based), or nil.
func observed(obs []results.StepObservations, step, i int) map[string]string {
	for _, so := range obs {
		if so.Step != step {
			continue
		}
		for _, o := range so.Replicas {
			if o.Replica == i {
				return o.Fields
			}
		}
	}
	return nil
}

// fieldsText renders an observation's fields sorted by name: "epoch=3 role=leader".
func fieldsText(fields map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		parts = append(parts, k+"="+fields[k])
	}
	return strings.Join(parts, " ")
}

// failedAs is how replica i of state s failed, as DRM d realises it: the kind the state
// remembers, or a quorum model's one kind; NotInLayout while it is online, or where the model
// does not say (a suspended or unlinked replica of a link model).
func failedAs(d drms.DRM, s *aem.State, i int) aem.Failure {
	if s.On[i] {
		return aem.NotInLayout
	}
	return d.KindOf(s.FailedAs(i))
}

// onlineState names a replica's state: online, crashed (its server down: a crash or a power
// loss), or offline (its server up, but paused, cut off, suspended or unlinked).
func onlineState(failed aem.Failure, on bool) string {
	switch {
	case on:
		return "online"
	case failed.Down():
		return "crashed"
	}
	return "offline"
}

// events says what transition t did to replica i, going from state before to after, where it
// failed by kind failed (NotInLayout where it did not, or the model does not say).
func events(t *aem.Transition, before, after *aem.State, i int, failed aem.Failure) []string {
	var parts []string
	if t.Kind == aem.Divergence {
		if w := t.Writes[i]; w > 0 {
			parts = append(parts, fmt.Sprintf("+%d %s", w, words.Plural(w, "write", "writes")))
		}
		if before.On[i] && !after.On[i] {
			what := failed.Verb()
			if what == "" {
				what = "fails"
			}
			parts = append(parts, what)
		}
		return parts
	}
	back := !before.On[i] && after.On[i]
	inGroup := slices.Contains(t.Group, i)
	switch {
	case inGroup && t.Resync == aem.Offline1:
		parts = append(parts, "offline resync 1")
	case inGroup && t.Resync == aem.Offline2:
		parts = append(parts, "offline resync 2")
	case inGroup || back:
		parts = append(parts, "recovers")
	case before.On[i] && !after.On[i]:
		parts = append(parts, "goes down")
	}
	switch {
	case t.Sources == nil: // a model without links: the system resyncs whom it brings back
		if inGroup || back {
			parts = append(parts, "resyncs")
		}
	case t.Sources[i] != aem.NoSource && (inGroup || back || before.Src[i] != t.Sources[i]):
		parts = append(parts, fmt.Sprintf("resyncs <- %d", t.Sources[i]))
	case t.Sources[i] == aem.NoSource && before.Src[i] != aem.NoSource:
		parts = append(parts, "unlinked")
	}
	return parts
}

// note is replica i's abstract version and source in state s: "v10000", "<- 0".
func note(s *aem.State, i int) []string {
	n := []string{fmt.Sprintf("v%d", s.RS[i])}
	if s.Src != nil {
		if src := s.Src[i]; src != aem.NoSource {
			n = append(n, fmt.Sprintf("<- %d", src))
		} else {
			n = append(n, "no source")
		}
	}
	return n
}

// replicaActions renders the concrete actions of step on replica i.
func replicaActions(actions []results.StepActions, step, i int) []string {
	var out []string
	for _, st := range actions {
		if st.Step != step {
			continue
		}
		for _, a := range st.Actions {
			if a.Replica == i || a.Replica < 0 {
				out = append(out, a.What)
			}
		}
	}
	return out
}
