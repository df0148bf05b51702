package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
)

// TestStepKinds: a step takes the one kind of every replica it fails or brings back; a
// divergence that breaks disks beside crashes takes the disk kind; any other mix none.
func TestStepKinds(t *testing.T) {
	for _, tt := range []struct {
		body string
		want []aem.Failure
	}{
		{"D[0,0,1](c,c,c) C[0,1,2]", []aem.Failure{aem.FailCrash, aem.FailCrash}},
		{"D[0,0,1](c,e,c) C[0,2] C[1]", []aem.Failure{aem.FailDiskError, aem.FailCrash, aem.FailDiskError}},
		{"D[0,0,1](c,b,c) C[0,1,2]", []aem.Failure{aem.FailCorruption, aem.NotInLayout}},
		{"D[0,0,1](l,b,l) C[0,2] C[1]", []aem.Failure{aem.NotInLayout, aem.FailPowerLoss, aem.FailCorruption}},
		{"D[0,0,1](c,s,c) C[1] C[0,2]", []aem.Failure{aem.NotInLayout, aem.FailPause, aem.FailCrash}},
	} {
		var steps []aem.Transition
		for _, f := range strings.Fields(tt.body) {
			tr, err := aem.ParseTransition(f)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, tr)
		}
		if got := stepKinds(steps, 3); !slices.Equal(got, tt.want) {
			t.Errorf("stepKinds(%s) = %v, want %v", tt.body, got, tt.want)
		}
	}
}
