package schedules_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// generated returns every schedule of drm for p, in file order.
func generated(t testing.TB, drm string, p aem.Params) (drms.DRM, []schedules.Schedule) {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	_, ss, err := schedules.Generated(d, p)
	if err != nil {
		t.Fatal(err)
	}
	return d, ss
}

func parse(t *testing.T, text string) []aem.Transition {
	t.Helper()
	var steps []aem.Transition
	for _, f := range bytes.Fields([]byte(text)) {
		tr, err := aem.ParseTransition(string(f))
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, tr)
	}
	return steps
}

func TestRestorePoints(t *testing.T) {
	p := aem.Params{Ops: 2, Replicas: 3}
	tests := []struct {
		drm, steps string
		want       []int
	}{
		// Every Q/C/Z divergence ends with every replica crashed; the last step is no point.
		{"qcz", "D[0,0,1] C[0,1] D[0,1,0] C[0,2] C[1]", []int{1, 3}},
		{"qcz", "D[0,0,1] C[0,1] C[2] D[0,0,1] C[0,1,2]", []int{1, 4}},
		// S/S/R suspends a minority at most: never every replica offline.
		{"ssr", "D[0,0,1] C[0,1]<-,0,-> C[2]<-,0,0>", nil},
	}
	for _, tt := range tests {
		d, err := drms.Lookup(tt.drm)
		if err != nil {
			t.Fatal(err)
		}
		if got := schedules.RestorePoints(d.Model, p, parse(t, tt.steps)); !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: restore points %v, want %v", tt.drm, tt.steps, got, tt.want)
		}
	}
}

// TestPlanFigures: the steps that one worker executes for Q/C/Z with three replicas, every
// schedule from scratch and with shared prefixes, as the deep-campaign issue counts them.
func TestPlanFigures(t *testing.T) {
	tests := []struct {
		ops                int
		plain, shared      int
		schedules, restore int
	}{
		{2, 367, 190, 80, 73},
		{3, 6828, 2567, 1035, 1019},
	}
	for _, tt := range tests {
		p := aem.Params{Ops: tt.ops, Replicas: 3}
		d, ss := generated(t, "qcz", p)
		all := [][]schedules.Schedule{ss}
		plain, shared := schedules.Plan(d.Model, p, all, false), schedules.Plan(d.Model, p, all, true)
		if plain.Steps != tt.plain || plain.Starts != tt.schedules || shared.Steps != tt.shared ||
			shared.Restores != tt.restore || shared.Starts+shared.Restores != tt.schedules {
			t.Errorf("ops=%d: plain %+v, shared %+v; want %d and %d steps, %d restores of %d", tt.ops, plain, shared, tt.plain, tt.shared, tt.restore, tt.schedules)
		}
	}
}

// TestGrouper: every schedule lands in exactly one unit, in file order; a unit's schedules
// share their first restore point's prefix; cutting large units costs few steps.
func TestGrouper(t *testing.T) {
	p := aem.Params{Ops: 3, Replicas: 3}
	d, ss := generated(t, "qcz", p)
	ideal := schedules.Plan(d.Model, p, [][]schedules.Schedule{ss}, true)
	for _, max := range []int{1, 16, 64, 1 << 20} {
		g := schedules.Grouper{Model: d.Model, Params: p, Max: max}
		var units [][]schedules.Schedule
		for _, s := range ss {
			if u := g.Add(s); u != nil {
				units = append(units, u)
			}
		}
		units = append(units, g.Flush())
		var ids []string
		for _, u := range units {
			first := schedules.RestorePoints(d.Model, p, u[0].Steps)[0]
			for _, s := range u {
				ids = append(ids, s.ID)
				if !slices.EqualFunc(s.Steps[:first], u[0].Steps[:first], func(a, b aem.Transition) bool { return aem.Equal(&a, &b) }) {
					t.Errorf("max %d: %s and %s share a unit but not their first divergence", max, s.ID, u[0].ID)
				}
			}
		}
		if len(ids) != len(ss) || !slices.EqualFunc(ids, ss, func(id string, s schedules.Schedule) bool { return id == s.ID }) {
			t.Fatalf("max %d: the units hold %d schedules, not the file's %d in its order", max, len(ids), len(ss))
		}
		w := schedules.Plan(d.Model, p, units, true)
		if w.Steps > ideal.Steps*11/10 {
			t.Errorf("max %d: %d units cost %d steps, more than 10%% above the %d of one unit", max, len(units), w.Steps, ideal.Steps)
		}
		if max == 1<<20 && len(units) != 16 {
			t.Errorf("uncut: %d units, want one per first divergence (16)", len(units))
		}
	}
}

// TestSharer: a worker restores the deepest saved prefix it shares, drops the others, and
// saves only what the next schedule shares.
func TestSharer(t *testing.T) {
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	p := aem.Params{Ops: 2, Replicas: 3}
	sched := func(text string) schedules.Schedule { return schedules.Schedule{ID: text, Steps: parse(t, text)} }
	a := sched("D[0,0,1] C[0,1] D[0,1,0] C[0,1] C[2]")
	b := sched("D[0,0,1] C[0,1] D[0,1,0] C[0,2] C[1]")
	c := sched("D[0,0,1] C[0,1] D[1,1,0] C[0,1] C[2]")
	e := sched("D[0,1,1] C[0,1] C[2] D[0,0,1] C[0,1,2]")
	sh := schedules.Sharer[string]{Model: d.Model, Params: p}

	st := sh.Begin(&a, &b)
	if st.Steps != 0 || !slices.Equal(st.Save, []int{1, 3}) {
		t.Fatalf("a: %+v, want a start afresh that saves after steps 1 and 3", st)
	}
	sh.Saved(&a, 1, "a1")
	sh.Saved(&a, 3, "a3")
	st = sh.Begin(&b, &c)
	if st.Steps != 3 || st.Saved != "a3" || len(st.Evicted) != 0 || len(st.Save) != 0 {
		t.Fatalf("b: %+v, want a restore of a3 and nothing to save", st)
	}
	st = sh.Begin(&c, &e)
	if st.Steps != 1 || st.Saved != "a1" || !slices.Equal(st.Evicted, []string{"a3"}) || len(st.Save) != 0 {
		t.Fatalf("c: %+v, want a restore of a1, a3 evicted, nothing to save (e shares nothing)", st)
	}
	st = sh.Begin(&e, nil)
	if st.Steps != 0 || !slices.Equal(st.Evicted, []string{"a1"}) || len(st.Save) != 0 {
		t.Fatalf("e: %+v, want a start afresh, a1 evicted", st)
	}
}
