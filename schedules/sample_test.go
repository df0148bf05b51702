package schedules_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// sample draws n schedules of Q/C/Z with seed and reads them back.
func sample(t *testing.T, p aem.Params, n, seed uint64) ([]byte, []schedules.Schedule) {
	t.Helper()
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := schedules.Sample(&b, d, p, "test", n, seed); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), readBack(t, b.Bytes())
}

// readBack reads a schedule file's schedules, failing t at the first problem.
func readBack(t *testing.T, file []byte) []schedules.Schedule {
	t.Helper()
	r, err := schedules.NewReader(bytes.NewReader(file), "file")
	if err != nil {
		t.Fatal(err)
	}
	var all []schedules.Schedule
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatalf("the file does not read back: %v", err)
		}
		all = append(all, s)
	}
}

// TestSampleDeep: 1,000 schedules of Q/C/Z ops=6 (2,236,607 in all, never enumerated here)
// drawn twice with one seed are the same file; another seed draws others; every sampled
// schedule reads back and is a path of the model.
func TestSampleDeep(t *testing.T) {
	p := aem.Params{Ops: 6, Replicas: 3}
	a, sa := sample(t, p, 1000, 1)
	b, _ := sample(t, p, 1000, 1)
	c, sc := sample(t, p, 1000, 2)
	if !bytes.Equal(a, b) {
		t.Error("one seed drew two samples")
	}
	if len(sa) != 1000 || len(sc) != 1000 {
		t.Fatalf("%d and %d schedules, want 1000", len(sa), len(sc))
	}
	if bytes.Equal(a, c) {
		t.Error("two seeds drew one sample")
	}
	if !strings.Contains(string(a), "# generator: test (a sample of 1000 of 2236607 schedules, seed 1)\n") {
		t.Errorf("header does not say it is a sample:\n%s", a[:200])
	}
	d, _ := drms.Lookup("qcz")
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sa {
		if _, err := g.Follow(s.Steps); err != nil {
			t.Fatalf("schedule %s is not a schedule of the model: %v", s.ID, err)
		}
	}
	same := 0
	for _, s := range sc {
		if slices.ContainsFunc(sa, func(x schedules.Schedule) bool { return x.ID == s.ID }) {
			same++
		}
	}
	t.Logf("seeds 1 and 2 share %d of 1000 schedules", same)
}

// TestSampleIsASubsequence: a sample of a space small enough to enumerate holds schedules of
// the full file, in its order; asking for as many as there are gives the full file.
func TestSampleIsASubsequence(t *testing.T) {
	p := aem.Params{Ops: 2, Replicas: 3}
	d, _ := drms.Lookup("qcz")
	var full bytes.Buffer
	if _, err := schedules.Generate(&full, d, p, "test", 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(full.String(), "\n")
	_, s := sample(t, p, 20, 7)
	at := 0
	for _, sc := range s {
		i := slices.IndexFunc(lines[at:], func(l string) bool { return strings.HasPrefix(l, sc.ID+" ") })
		if i < 0 {
			t.Fatalf("schedule %s is not in the full file after line %d", sc.ID, at)
		}
		at += i + 1
	}
	all, _ := sample(t, p, 1000, 7)
	if !bytes.Equal(all, full.Bytes()) {
		t.Error("a sample of more than all is not the full file")
	}
}

// TestSampleUniform: one schedule drawn from the 6 of Q/C/Z ops=1 with 6,000 seeds comes out
// about 1,000 times each (a deviation beyond 200 has a probability below 1e-10).
func TestSampleUniform(t *testing.T) {
	counts := map[string]int{}
	for seed := range uint64(6000) {
		_, s := sample(t, aem.Params{Ops: 1, Replicas: 3}, 1, seed)
		counts[s[0].ID]++
	}
	if len(counts) != 6 {
		t.Fatalf("drew %d distinct schedules, want 6", len(counts))
	}
	for id, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("schedule %s drawn %d times of 6000, want about 1000", id, n)
		}
	}
}
