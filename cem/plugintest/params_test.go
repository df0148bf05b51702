package plugintest

import (
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// TestDefaultParams: each zero field of Config.Params takes its default on its own; a Params
// with only Ops set once reached the model with 0 replicas ("replicas must be between 2 and
// 16, got 0").
func TestDefaultParams(t *testing.T) {
	qcz, err := drms.Lookup("qcz") // ops 1-5, 3 replicas by default
	if err != nil {
		t.Fatal(err)
	}
	one := drms.DRM{Name: "one", Ops: []int{1}, Defaults: aem.Params{Ops: 1, Replicas: 2}}
	tests := []struct {
		name string
		d    drms.DRM
		p    aem.Params
		want aem.Params
	}{
		{"both zero", qcz, aem.Params{}, aem.Params{Ops: 2, Replicas: 3}},
		{"ops only", qcz, aem.Params{Ops: 1}, aem.Params{Ops: 1, Replicas: 3}},
		{"replicas only", qcz, aem.Params{Replicas: 5}, aem.Params{Ops: 2, Replicas: 5}},
		{"both set", qcz, aem.Params{Ops: 3, Replicas: 4}, aem.Params{Ops: 3, Replicas: 4}},
		{"a DRM of one write", one, aem.Params{}, aem.Params{Ops: 1, Replicas: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultParams(tt.d, tt.p); got != tt.want {
				t.Errorf("defaultParams(%s, %+v) = %+v, want %+v", tt.d.Name, tt.p, got, tt.want)
			}
		})
	}
}
