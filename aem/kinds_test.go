package aem

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestKindSetCounts pins the counts of the quorum model over sets of failure kinds
// (docs/aem.md): what matters is how many kinds there are, since a run of alike replicas
// counts only how many take each, and how many of them break disks. Two kinds count as
// crash-partition does.
func TestKindSetCounts(t *testing.T) {
	sizes := []Params{{Ops: 1, Replicas: 3}, {Ops: 2, Replicas: 3}, {Ops: 3, Replicas: 3}, {Ops: 1, Replicas: 5}, {Ops: 2, Replicas: 5}}
	for _, tt := range []struct {
		kinds []Failure
		want  []uint64 // at sizes
	}{
		{[]Failure{FailCrash}, []uint64{6, 80, 1035, 22, 1091}},
		{[]Failure{FailPause}, []uint64{6, 80, 1035, 22, 1091}},
		{[]Failure{FailCrash, FailPause}, []uint64{40, 2440, 148504, 340, 184760}},
		{[]Failure{FailCrash, FailPowerLoss}, []uint64{40, 2440, 148504, 340, 184760}},
		{[]Failure{FailPowerLoss, FailPause}, []uint64{40, 2440, 148504, 340, 184760}},
		{[]Failure{FailCrash, FailPartition, FailPause}, []uint64{126, 21366, 3623265, 1932, 5176647}},
		{[]Failure{FailCrash, FailPowerLoss, FailPause}, []uint64{126, 21366, 3623265, 1932, 5176647}},
		{[]Failure{FailCrash, FailPowerLoss, FailPartition, FailPause}, []uint64{288, 104576, 37983648, 6960, 62029392}},
		// A kind that breaks disks breaks a minority's at most (TestDiskKindsMinority).
		{[]Failure{FailCrash, FailDiskError}, []uint64{20, 674, 22634, 170, 49194}},
		{[]Failure{FailCrash, FailCorruption}, []uint64{20, 674, 22634, 170, 49194}},
		{[]Failure{FailCrash, FailPowerLoss, FailPause, FailDiskError, FailCorruption}, []uint64{354, 155310, 68188491, 12880, 205022413}},
	} {
		m, err := NewQuorumOf("Q/X/Z", tt.kinds...)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range sizes {
			t.Run(fmt.Sprintf("%v/ops=%d/n=%d", tt.kinds, p.Ops, p.Replicas), func(t *testing.T) {
				g, err := NewGraph(m, p)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := g.Count(); err != nil || got != tt.want[k] {
					t.Errorf("Count() = %d, %v; want %d", got, err, tt.want[k])
				}
			})
		}
	}
}

// TestDiskKindsMinority: a model with a kind that breaks disks has exactly the schedules of
// the same model with a kind that does not (pause for disk-error, power loss for corruption: each
// as down as the other), less those in which more than a minority of the replicas have broken
// disks at once: what the divergences skip, and nothing else.
func TestDiskKindsMinority(t *testing.T) {
	for _, tt := range []struct {
		disk, like Failure
		other      Failure
	}{
		{FailDiskError, FailPause, FailCrash},
		{FailCorruption, FailPowerLoss, FailCrash},
	} {
		for _, p := range []Params{{Ops: 1, Replicas: 3}, {Ops: 2, Replicas: 3}, {Ops: 1, Replicas: 5}} {
			t.Run(fmt.Sprintf("%s/ops=%d/n=%d", tt.disk, p.Ops, p.Replicas), func(t *testing.T) {
				like, err := NewQuorumOf("Q/X/Z", tt.other, tt.like)
				if err != nil {
					t.Fatal(err)
				}
				disk, err := NewQuorumOf("Q/X/Z", tt.other, tt.disk)
				if err != nil {
					t.Fatal(err)
				}
				letter := func(tr Transition) string {
					return strings.ReplaceAll(tr.String(), string(tt.like.Letter()), string(tt.disk.Letter()))
				}
				minority := func(path []Transition) bool {
					s := like.Init(p)
					for _, tr := range path {
						s = like.Apply(p, &s, &tr)
						broken := 0
						for i := range s.On {
							if s.FailedAs(i) == tt.like {
								broken++
							}
						}
						if broken > p.Replicas/2 {
							return false
						}
					}
					return true
				}
				want := &bodies{keep: minority, strip: letter}
				got := &bodies{keep: func([]Transition) bool { return true }, strip: Transition.String}
				for _, w := range []struct {
					m Model
					v Visitor
				}{{like, want}, {disk, got}} {
					g, err := NewGraph(w.m, p)
					if err != nil {
						t.Fatal(err)
					}
					if err := g.Walk(w.v); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(want.got)
				slices.Sort(got.got)
				if !slices.Equal(got.got, want.got) || len(got.got) == 0 {
					t.Errorf("%d schedules, want the %d of %s that break a minority's disks at most", len(got.got), len(want.got), tt.like)
				}
			})
		}
	}
	if _, err := NewQuorumOf("Q/X/Z", FailDiskError, FailCorruption); err == nil {
		t.Error("NewQuorumOf(disk-error, corruption): no error, but every divergence would break every online replica's disk")
	}
}

// TestKindSetHoldsQuorum: of the schedules of a set of kinds, those whose divergences fail
// every replica with the same kind are, kinds left out, exactly Q/C/Z's, for each kind.
func TestKindSetHoldsQuorum(t *testing.T) {
	m, err := NewQuorumOf("Q/X/Z", FailCrash, FailPowerLoss, FailPartition, FailPause)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Params{{Ops: 1, Replicas: 3}, {Ops: 2, Replicas: 3}, {Ops: 1, Replicas: 5}} {
		holdsQuorum(t, m, p)
	}
}

// TestKindSetSteps: a divergence gives a run of alike replicas every count of each kind, in
// the kinds' order; a convergence tells apart offline replicas of one version that failed
// differently, and a paused replica is not down.
func TestKindSetSteps(t *testing.T) {
	m, err := NewQuorumOf("Q/CS/Z", FailPause, FailCrash) // put in Kinds' order: crash, pause
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Kinds(); !slices.Equal(got, []Failure{FailCrash, FailPause}) {
		t.Errorf("Kinds() = %v, want crash, pause", got)
	}
	p := Params{Ops: 1, Replicas: 3}
	s := m.Init(p)
	var ds []string
	for _, tr := range m.Next(p, &s, nil) {
		if slices.Equal(tr.Writes, []int{0, 0, 1}) {
			ds = append(ds, tr.String())
		}
	}
	// Replicas 0 and 1 (no write) are one run, 2 (the write) another; the first run's counts vary
	// slowest, crashes before pauses within a run.
	want := []string{"D[0,0,1](s,s,s)", "D[0,0,1](s,s,c)", "D[0,0,1](c,s,s)", "D[0,0,1](c,s,c)", "D[0,0,1](c,c,s)", "D[0,0,1](c,c,c)"}
	if !slices.Equal(ds, want) {
		t.Errorf("divergences %v, want %v", ds, want)
	}
	d, err := ParseTransition("D[0,0,1](c,s,s)")
	if err != nil {
		t.Fatal(err)
	}
	s = m.Apply(p, &s, &d)
	if !s.Crashed(0) || s.Crashed(1) || s.FailedAs(1) != FailPause || AllDown(m, &s) {
		t.Errorf("after %s: %+v, crashed %v %v, all down %v", &d, s, s.Crashed(0), s.Crashed(1), AllDown(m, &s))
	}
	if got := s.String(); !strings.Contains(got, "online=[x s s]") {
		t.Errorf("state %s, want online=[x s s]", got)
	}
	var cs []string
	for _, tr := range m.Next(p, &s, nil) {
		cs = append(cs, tr.String())
	}
	// 0 (crashed) and 1 (paused) are both at version 0, yet not alike: every pair comes back.
	if want := []string{"C[0,1]", "C[0,2]", "C[1,2]", "C[0,1,2]"}; !slices.Equal(cs, want) {
		t.Errorf("convergences %v, want %v", cs, want)
	}
}

func TestParseFailure(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Failure
		err  string
	}{
		{"crash", FailCrash, ""}, {"c", FailCrash, ""}, {"power-loss", FailPowerLoss, ""}, {"l", FailPowerLoss, ""},
		{"partition", FailPartition, ""}, {"p", FailPartition, ""}, {"pause", FailPause, ""}, {"s", FailPause, ""},
		{"disk-error", FailDiskError, ""}, {"e", FailDiskError, ""}, {"corruption", FailCorruption, ""}, {"b", FailCorruption, ""},
		{"none", 0, `unknown failure kind "none"`}, {"x", 0, "crash (c), power-loss (l), partition (p), pause (s), disk-error (e), corruption (b)"}, {"", 0, "unknown"},
	} {
		got, err := ParseFailure(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseFailure(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseFailure(%q) error %v, want one saying %q", tt.in, err, tt.err)
		}
	}
	if _, err := NewQuorumOf("Q/X/Z", FailCrash, FailCrash); err == nil {
		t.Error("NewQuorumOf with a kind twice: no error")
	}
	if _, err := NewQuorumOf("Q/X/Z", FailNone); err == nil {
		t.Error("NewQuorumOf(none): no error")
	}
}

// TestKindsNamed: every kind has a name, a letter of its own, a verb and a mark in a state's
// key but partition, which keeps the crash-partition model's keys.
func TestKindsNamed(t *testing.T) {
	letters := map[byte]Failure{}
	for _, f := range Kinds {
		if strings.HasPrefix(f.String(), "Failure(") || f.Verb() == "" || int(f) >= len(failureLetters) || f.Letter() == 0 {
			t.Errorf("kind %d: name %q, verb %q", f, f.String(), f.Verb())
			continue
		}
		if g, ok := letters[f.Letter()]; ok {
			t.Errorf("%s and %s share the letter %c", f, g, f.Letter())
		}
		letters[f.Letter()] = f
		if f != FailPartition && (int(f) >= len(failedKey) || failedKey[f] == "") {
			t.Errorf("%s has no mark in a state's key", f)
		}
	}
}

// TestCrashLinkKindCounts pins S/CL/R's counts with each failing replica crashed or losing
// power (docs/aem.md): a failing replica takes either kind, and nothing else changes, so the
// schedules in which every failure is a crash are S/CL/R's own.
func TestCrashLinkKindCounts(t *testing.T) {
	m, err := NewCrashLinkOf("S/CL/R+power-loss", FailPowerLoss)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p          Params
		mixed, own uint64
	}{
		{Params{Ops: 1, Replicas: 2}, 20, 8},
		{Params{Ops: 2, Replicas: 2}, 484, 96},
		{Params{Ops: 3, Replicas: 2}, 11620, 1120},
		{Params{Ops: 1, Replicas: 3}, 1116, 252},
		{Params{Ops: 2, Replicas: 3}, 671820, 42304},
	} {
		t.Run(fmt.Sprintf("ops=%d/n=%d", tt.p.Ops, tt.p.Replicas), func(t *testing.T) {
			g, err := NewGraph(m, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := g.Count(); err != nil || got != tt.mixed {
				t.Errorf("Count() = %d, %v; want %d", got, err, tt.mixed)
			}
			if tt.p.Ops*tt.p.Replicas > 4 {
				return // the walks below are for the small sizes
			}
			always := func([]Transition) bool { return true }
			crashesOnly := &bodies{strip: Transition.String, keep: func(path []Transition) bool {
				return !slices.ContainsFunc(path, func(tr Transition) bool { return slices.Contains(tr.Failures, FailPowerLoss) })
			}}
			if err := g.Walk(crashesOnly); err != nil {
				t.Fatal(err)
			}
			own := &bodies{strip: Transition.String, keep: always}
			sclr, err := NewGraph(SCLR, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if err := sclr.Walk(own); err != nil {
				t.Fatal(err)
			}
			slices.Sort(crashesOnly.got)
			slices.Sort(own.got)
			if uint64(len(own.got)) != tt.own || !slices.Equal(crashesOnly.got, own.got) {
				t.Errorf("the %d schedules without a power loss are not S/CL/R's %d (want %d)", len(crashesOnly.got), len(own.got), tt.own)
			}
		})
	}
}

// TestCrashLinkKindsRefused: S/CL/R's failures take power loss alone besides a crash.
func TestCrashLinkKindsRefused(t *testing.T) {
	for _, f := range []Failure{FailPause, FailPartition, FailDiskError, FailCorruption, FailCrash} {
		if _, err := NewCrashLinkOf("S/CL/R+x", f); err == nil {
			t.Errorf("NewCrashLinkOf(%s) took it", f)
		}
	}
}
