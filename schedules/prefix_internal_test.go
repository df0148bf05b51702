package schedules

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// TestPointFinder: in file order, and in an order that shares little, the finder's restore
// points are RestorePoints'.
func TestPointFinder(t *testing.T) {
	for _, c := range []struct {
		drm string
		p   aem.Params
	}{{"qcz", aem.Params{Ops: 3, Replicas: 3}}, {"sclr", aem.Params{Ops: 2, Replicas: 2}}} {
		d, err := drms.Lookup(c.drm)
		if err != nil {
			t.Fatal(err)
		}
		_, ss, err := Generated(d, c.p)
		if err != nil {
			t.Fatal(err)
		}
		reversed := slices.Clone(ss)
		slices.Reverse(reversed)
		for _, order := range [][]Schedule{ss, reversed} {
			f := pointFinder{model: d.Model, params: c.p}
			for _, s := range order {
				if got, want := f.points(s.Steps), RestorePoints(d.Model, c.p, s.Steps); !slices.Equal(got, want) {
					t.Fatalf("%s: schedule %s: %v, want %v", c.drm, s.ID, got, want)
				}
			}
		}
	}
}
