package schedules_test

import (
	"bytes"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// TestCoverageOrder orders Q/C/Z ops=3 (1,035 schedules): the order is a permutation, it takes
// every transition of the state graph, and after 10% of the schedules it has taken more of
// them than the canonical order, and all of them sooner.
func TestCoverageOrder(t *testing.T) {
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	p := aem.Params{Ops: 3, Replicas: 3}
	var file bytes.Buffer
	if _, err := schedules.Generate(&file, d, p, "test", 0); err != nil {
		t.Fatal(err)
	}
	all := readBack(t, file.Bytes())
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		t.Fatal(err)
	}
	ordered, err := schedules.CoverageOrder(g, all)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range ordered {
		seen[s.ID] = true
	}
	if len(ordered) != len(all) || len(seen) != len(all) {
		t.Fatalf("%d schedules ordered (%d distinct), want the %d given", len(ordered), len(seen), len(all))
	}
	plain, err := schedules.Covered(g, all)
	if err != nil {
		t.Fatal(err)
	}
	cover, err := schedules.Covered(g, ordered)
	if err != nil {
		t.Fatal(err)
	}
	total := plain[len(plain)-1]
	if n, err := g.Transitions(); err != nil || n != total {
		t.Fatalf("the graph has %d transitions (%v), the schedules take %d", n, err, total)
	}
	if cover[len(cover)-1] != total {
		t.Fatalf("the coverage order takes %d transitions, the canonical %d", cover[len(cover)-1], total)
	}
	tenth := len(all) / 10
	full := func(c []int) int {
		for i, n := range c {
			if n == total {
				return i + 1
			}
		}
		return len(c)
	}
	t.Logf("%d transitions; after 10%% (%d schedules): canonical order %d (%.1f%%), coverage order %d (%.1f%%); all taken after %d and %d schedules",
		total, tenth, plain[tenth-1], 100*float64(plain[tenth-1])/float64(total), cover[tenth-1], 100*float64(cover[tenth-1])/float64(total), full(plain), full(cover))
	if cover[tenth-1] <= plain[tenth-1] || full(cover) >= full(plain) {
		t.Errorf("the coverage order is no better: after %d schedules %d against %d; all after %d against %d", tenth, cover[tenth-1], plain[tenth-1], full(cover), full(plain))
	}
}
