package drms

import (
	"testing"

	"github.com/modulo-testing/modulo/aem"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name, want, wantErr string
	}{
		{"qcz", "Q/C/Z", ""},
		{"QCM", "Q/C/M", ""},
		{"s/cl/r", "S/CL/R", ""},
		{"slr", "S/L/R", ""},
		{"ssr", "S/S/R", ""},
		{"raft", "", `unknown DRM "raft" (known: qce, qcm, qcz, sclr, slr, ssr)`},
	}
	for _, tt := range tests {
		d, err := Lookup(tt.name)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Lookup(%q) error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || d.Title != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.name, d.Title, err, tt.want)
		}
	}
}

// TestCatalogue checks that every DRM's model carries its title and that the paper's default
// parameters are among the values it ran and make schedules.
func TestCatalogue(t *testing.T) {
	for _, d := range All() {
		if d.Model.Name() != d.Title {
			t.Errorf("%s: model %s", d.Name, d.Model.Name())
		}
		g, err := aem.NewGraph(d.Model, d.Defaults)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if n, err := g.Count(); err != nil || n == 0 {
			t.Errorf("%s defaults %+v: %d schedules, %v", d.Name, d.Defaults, n, err)
		}
	}
}
