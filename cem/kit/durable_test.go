package kit

import (
	"slices"
	"testing"
)

// TestLostKeys: a server restarted after a power loss loses a key it held when the key is gone
// or holds another value; keys it gained since (a standby that streamed on) are no loss.
func TestLostKeys(t *testing.T) {
	before := map[string]string{"k1.1": "a", "k2.1": "b", "k3.1": "c"}
	tests := []struct {
		name string
		now  map[string]string
		want []string
	}{
		{"kept", map[string]string{"k1.1": "a", "k2.1": "b", "k3.1": "c"}, nil},
		{"gained", map[string]string{"k1.1": "a", "k2.1": "b", "k3.1": "c", "k4.1": "d"}, nil},
		{"missing", map[string]string{"k1.1": "a"}, []string{"k2.1 (missing)", "k3.1 (missing)"}},
		{"another value", map[string]string{"k1.1": "a", "k2.1": "x", "k3.1": "c"}, []string{"k2.1 (another value)"}},
		{"empty", map[string]string{}, []string{"k1.1 (missing)", "k2.1 (missing)", "k3.1 (missing)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lostKeys(before, tt.now); !slices.Equal(got, tt.want) {
				t.Errorf("lostKeys = %q, want %q", got, tt.want)
			}
		})
	}
}
