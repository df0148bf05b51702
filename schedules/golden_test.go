package schedules

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// TestGoldenSets compares the generated schedule sets with the reference generator's, line for
// line, so that a rule change that keeps the count cannot pass. The files in testdata/golden are
// copies of shared/spec/golden: schedules as gen writes them, IDs dropped, sorted bytewise.
func TestGoldenSets(t *testing.T) {
	tests := []struct {
		drm  string
		p    aem.Params
		file string
	}{
		{"sclr", aem.Params{Ops: 1, Replicas: 2}, "sclr-ops1-replicas2.txt"},
		{"sclr", aem.Params{Ops: 2, Replicas: 2}, "sclr-ops2-replicas2.txt"},
		{"sclr", aem.Params{Ops: 1, Replicas: 3}, "sclr-ops1-replicas3.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want := readGolden(t, filepath.Join("testdata", "golden", tt.file))
			got := generatedSet(t, tt.drm, tt.p)
			if slices.Equal(got, want) {
				return
			}
			missing, extra := difference(want, got), difference(got, want)
			t.Errorf("generated %d schedules, the reference %d; %d only in the reference, %d only generated", len(got), len(want), len(missing), len(extra))
			for _, l := range head(missing, 10) {
				t.Errorf("only in the reference: %s", l)
			}
			for _, l := range head(extra, 10) {
				t.Errorf("only generated:        %s", l)
			}
		})
	}
}

func readGolden(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// generatedSet writes d's schedules as gen does, reads them back and returns their bodies
// sorted bytewise.
func generatedSet(t *testing.T, drm string, p aem.Params) []string {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Generate(&buf, d, p, "test", 0); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf, drm)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(Body(s.Steps)))
	}
	slices.Sort(bodies)
	return bodies
}

// difference lists the lines of a that b lacks; both sorted.
func difference(a, b []string) []string {
	var d []string
	for _, l := range a {
		if _, found := slices.BinarySearch(b, l); !found {
			d = append(d, l)
		}
	}
	return d
}

func head(ls []string, n int) []string { return ls[:min(n, len(ls))] }
