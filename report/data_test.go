package report

import (
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
)

// TestDataTableLongValues: 10 KB values (the paper's Redis preset) are shown by their first
// bytes, length and digest, so that two that differ only past their first bytes still read as
// different, and the caption says where the whole values are.
func TestDataTableLongValues(t *testing.T) {
	long := "k1.1" + strings.Repeat(".", 10236) // sha256 c9da7246; with an x, 8bd4d9d1
	snap := &cem.Snapshot{Replicas: []cem.ReplicaData{
		{Data: map[string]string{"k1.1": long, "k2.1": long, "short": "v"}},
		{Data: map[string]string{"k1.1": long + "x", "k2.1": long, "short": "v"}},
	}}
	d := newDataTable(snap)
	dots28 := strings.Repeat(".", 28)
	cells := map[string][]string{}
	for _, r := range d.Rows {
		for _, c := range r.Cells {
			cells[r.Key] = append(cells[r.Key], c.Text)
		}
	}
	want := map[string][]string{
		"k1.1":  {`"k1.1` + dots28 + `"… (10240 bytes, sha256 c9da7246)`, `"k1.1` + dots28 + `"… (10241 bytes, sha256 8bd4d9d1)`},
		"k2.1":  {`"k1.1` + dots28 + `"… (10240 bytes, sha256 c9da7246)`, `"k1.1` + dots28 + `"… (10240 bytes, sha256 c9da7246)`},
		"short": {"v", "v"},
	}
	for k, w := range want {
		if strings.Join(cells[k], " | ") != strings.Join(w, " | ") {
			t.Errorf("row %s: %q, want %q", k, cells[k], w)
		}
	}
	if got := d.String(); got != "1 key differs; 4 long values shown by their first bytes, length and SHA-256 (every value whole: the failure folder's replicas.json)" {
		t.Errorf("caption %q", got)
	}
}
