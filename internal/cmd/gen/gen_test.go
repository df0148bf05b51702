package gen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/cmdutil"
)

func intp(v int) *int { return &v }

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		wantOut  string // prefix of the output
		wantErr  string
		wantCode int
	}{
		{name: "count", opts: Options{DRM: "qcz", Ops: intp(5), Replicas: intp(3), Count: true}, wantOut: "172997\n"},
		{name: "sample beyond enumeration", opts: Options{DRM: "qcz", Ops: intp(6), Replicas: intp(3), Sample: 3, Seed: 1},
			wantOut: "# modulo schedules v1\n# drm: qcz\n# ops: 6\n# replicas: 3\n# generator: " + build.Generator + " (a sample of 3 of 2236607 schedules, seed 1)\n# schedules: 3\n"},
		{name: "sample and limit", opts: Options{DRM: "qcz", Sample: 3, Limit: 2}, wantErr: "--sample and --limit choose schedules two ways: pass one", wantCode: 2},
		{name: "count by title", opts: Options{DRM: "Q/C/Z", Ops: intp(3), Replicas: intp(5), Count: true}, wantOut: "54655\n"},
		{name: "defaults from the paper", opts: Options{DRM: "sclr", Count: true}, wantOut: "96\n"},
		{name: "huge count answers at once", opts: Options{DRM: "qcz", Ops: intp(12), Replicas: intp(3), Count: true}, wantOut: ""},
		{name: "write", opts: Options{DRM: "qcz", Ops: intp(1), Replicas: intp(3)}, wantOut: "# modulo schedules v1\n# drm: qcz\n"},
		{name: "limit", opts: Options{DRM: "qcz", Ops: intp(3), Replicas: intp(3), Limit: 2}, wantOut: "# modulo schedules v1\n# drm: qcz\n# ops: 3\n# replicas: 3\n# generator: modulo 0.1.0\n# schedules: 2\n"},
		{name: "no drm", opts: Options{}, wantErr: "--drm is required (one of qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr, or a plugin's: modulo plugins)", wantCode: 2},
		{name: "unknown drm", opts: Options{DRM: "raft"}, wantErr: `unknown DRM "raft" (known: qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr)`, wantCode: 2},
		{name: "zero replicas", opts: Options{DRM: "qcz", Replicas: intp(0)}, wantErr: "qcz: replicas must be between 2 and 16, got 0", wantCode: 2},
		{name: "negative ops", opts: Options{DRM: "qcz", Ops: intp(-1)}, wantErr: "qcz: ops must be between 1 and 16, got -1", wantCode: 2},
		{name: "enormous", opts: Options{DRM: "qcz", Ops: intp(6), Replicas: intp(3)}, wantErr: "qcz with ops=6 replicas=3 has 2236607 schedules; pass --limit N to write the first N, --sample N to draw N at random, or --force to write them all", wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out = &out
			err := Run(&tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if code := cmdutil.Code(err); code != tt.wantCode {
					t.Fatalf("exit status = %d, want %d", code, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.String(), tt.wantOut) || out.Len() == 0 {
				t.Fatalf("output starts %q, want %q", first(out.String(), 200), tt.wantOut)
			}
		})
	}
}

func first(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func TestRunWritesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.sched")
	if err := Run(&Options{DRM: "slr", Ops: intp(1), Replicas: intp(3), Output: path}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "\n"); got != 6+6 {
		t.Fatalf("file has %d lines, want 6 header lines and 6 schedules", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}
}

func TestRunUnwritableOutput(t *testing.T) {
	err := Run(&Options{DRM: "qcz", Ops: intp(1), Replicas: intp(3), Output: "/nonexistent/dir/x.sched"})
	if err == nil || err.Error() != "write /nonexistent/dir/x.sched: directory /nonexistent/dir does not exist" {
		t.Fatalf("error = %v", err)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		want Options
	}{
		{[]string{"--drm", "qcz"}, Options{DRM: "qcz"}},
		{[]string{"--drm", "qcz", "--ops", "5", "--replicas", "3", "-o", "f", "--limit", "7", "--force", "--count"},
			Options{DRM: "qcz", Ops: intp(5), Replicas: intp(3), Output: "f", Limit: 7, Force: true, Count: true}},
		{[]string{"--drm", "qcz", "--ops", "0"}, Options{DRM: "qcz", Ops: intp(0)}},
	}
	for _, tt := range tests {
		var got *Options
		cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got.DRM != tt.want.DRM || !sameInt(got.Ops, tt.want.Ops) || !sameInt(got.Replicas, tt.want.Replicas) ||
			got.Output != tt.want.Output || got.Limit != tt.want.Limit || got.Force != tt.want.Force || got.Count != tt.want.Count {
			t.Errorf("%v: options = %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

func sameInt(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
