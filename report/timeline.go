package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// timeline is a schedule drawn as the paper's Figure 2 draws one: a row per replica, a
// column per step (the start first), each cell saying whether the replica is online after
// the step, what the step did to it (writes received, failed, resynced) and its link.
type timeline struct {
	W, H    float64
	Columns []column
	Rows    []row
}

type column struct {
	X, W  float64
	Label string // "start", "step 3"
	Text  string // the transition
}

type row struct {
	Replica int
	Y       float64
	Label   string
	Cells   []cell
}

type cell struct {
	X, Y, W, H float64
	// State is online, offline or crashed: the replica after the step.
	State string
	// Events say what the step did to the replica, a line each: "+2 writes", "fails",
	// "recovers", "resyncs <- 0".
	Events []string
	// Note is its state after the step: its abstract version and its replication source.
	Note  string
	Title string // tooltip: the state and the concrete actions on the replica
}

const (
	tlLabelW  = 84.0
	tlColW    = 132.0
	tlHeadH   = 40.0
	tlRowH    = 56.0
	tlLegendH = 24.0
	tlMinW    = 740.0 // the legend's width
)

// newTimeline draws schedule s of header h; actions are the concrete actions the plugin took,
// by step, as far as the run got, and obs what it observed after each step.
func newTimeline(h schedules.Header, s schedules.Schedule, actions []results.StepActions, obs []results.StepObservations) (*timeline, error) {
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
	tl := &timeline{W: max(tlLabelW+float64(len(states))*tlColW+8, tlMinW), H: tlHeadH + float64(n)*tlRowH + tlLegendH}
	for j := range states {
		c := column{X: tlLabelW + float64(j)*tlColW, W: tlColW, Label: "start", Text: "initial state"}
		if j > 0 {
			c.Label, c.Text = fmt.Sprintf("step %d", j), s.Steps[j-1].String()
		}
		tl.Columns = append(tl.Columns, c)
	}
	servers := serversOf(actions, n, len(states))
	for i := range n {
		r := row{Replica: i, Y: tlHeadH + float64(i)*tlRowH, Label: fmt.Sprintf("replica %d", i)}
		for j, st := range states {
			c := cell{X: tl.Columns[j].X + 2, Y: r.Y + 3, W: tlColW - 4, H: tlRowH - 6, State: onlineState(&st, i)}
			var acts []string
			if j > 0 {
				c.Events = events(&s.Steps[j-1], &states[j-1], &st, i)
				acts = replicaActions(actions, j-1, i)
				if o := observed(obs, j-1, i); o != nil {
					if sync := o[cem.ObserveSync]; sync != "" {
						c.Events = append(c.Events, "sync "+sync)
					}
					if o[cem.ObserveNetwork] == cem.CutOff {
						c.Events = append(c.Events, "partitioned: cut off from its peers")
					}
					acts = append(acts, "observed: "+fieldsText(o))
				}
			}
			c.Note = note(&st, i)
			// Which server realises the abstract replica, where it is first known or changes.
			if srv := servers[j][i]; srv != "" && (j == 0 || srv != servers[j-1][i]) {
				c.Note += " · " + srv
			}
			c.Title = fmt.Sprintf("replica %d after %s: %s, %s", i, strings.ToLower(tl.Columns[j].Label), c.State, c.Note)
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
	return tl, nil
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

// observed returns what the plugin observed of replica i after step, or nil.
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

// onlineState names replica i's state in s: a quorum model's failures are all crashes, a
// link model's are crashes only where S/CL/R says so.
func onlineState(s *aem.State, i int) string {
	switch {
	case s.On[i]:
		return "online"
	case s.Src == nil || s.Crashed(i):
		return "crashed"
	}
	return "offline"
}

// events says what transition t did to replica i, going from state before to after.
func events(t *aem.Transition, before, after *aem.State, i int) []string {
	var parts []string
	if t.Kind == aem.Divergence {
		if w := t.Writes[i]; w > 0 {
			parts = append(parts, fmt.Sprintf("+%d %s", w, words.Plural(w, "write", "writes")))
		}
		switch {
		case before.On[i] && !after.On[i] && after.Crashed(i):
			parts = append(parts, "crashes")
		case before.On[i] && !after.On[i]:
			parts = append(parts, "fails")
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

// note is replica i's abstract version and source in state s.
func note(s *aem.State, i int) string {
	n := fmt.Sprintf("v%d", s.RS[i])
	if s.Src != nil {
		if src := s.Src[i]; src != aem.NoSource {
			n += fmt.Sprintf(", <- %d", src)
		} else {
			n += ", no source"
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

// LegendY is where the legend's line runs, under the rows.
func (tl *timeline) LegendY() float64 { return tl.H - 8 }
