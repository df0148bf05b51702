package rerun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/schedules"
)

// TestRunRefuses checks what Run refuses before it starts anything; running schedules is
// tested on real clusters by `modulo replay` and `modulo shrink` (internal/cmd/shrink).
func TestRunRefuses(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no runs", Options{Repeat: 0, Dir: filepath.Join(t.TempDir(), "r")}, "repeat 0 times: must be at least 1"},
		{"a directory in use", Options{Repeat: 1, Dir: used}, "file exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Setup{}, h, all[0], tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), all[0].ID) {
				t.Fatalf("error = %v, want one naming %s and containing %q", err, all[0].ID, tt.want)
			}
		})
	}
}
