package schedules

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

func TestReadBadFiles(t *testing.T) {
	tests := []struct {
		file string
		want string // the whole message: FILE:LINE: what is wrong
	}{
		{"empty.sched", "testdata/bad/empty.sched: empty file, not a schedule file"},
		{"not-schedules.sched", `testdata/bad/not-schedules.sched:1: not a modulo schedule file (first line must be "# modulo schedules v1")`},
		{"short-header.sched", `testdata/bad/short-header.sched:5: header ends early: missing "schedules"`},
		{"unknown-drm.sched", `testdata/bad/unknown-drm.sched:2: unknown DRM "zzz" (known: qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr)`},
		{"bad-ops.sched", `testdata/bad/bad-ops.sched:3: ops: "x" is not a number`},
		{"one-replica.sched", "testdata/bad/one-replica.sched:3: replicas must be between 2 and 16, got 1"},
		{"truncated.sched", "testdata/bad/truncated.sched:7: file ends after 1 schedules, header says 2 (truncated?)"},
		{"extra.sched", "testdata/bad/extra.sched:8: more schedules than the header's 1"},
		{"duplicate.sched", "testdata/bad/duplicate.sched:8: schedule 98c37077b767ad32 repeats line 7"},
		{"wrong-id.sched", "testdata/bad/wrong-id.sched:7: ID 98c37077b767ad33 does not match the schedule (its ID is 98c37077b767ad32): edited by hand?"},
		{"bad-id.sched", `testdata/bad/bad-id.sched:7: ID "XYZ" is not 16 lowercase hex digits`},
		{"not-enabled.sched", "testdata/bad/not-enabled.sched:7: not a Q/C/Z schedule: step 2 (C[1,2]) is not enabled in the state before it (left=0 rs=[0 0 1] online=[- - -])"},
		{"ends-early.sched", "testdata/bad/ends-early.sched:7: not a Q/C/Z schedule: schedule ends after step 2 although transitions are still enabled (left=0 rs=[10000 10000 1] online=[+ + -])"},
		{"bad-token.sched", `testdata/bad/bad-token.sched:7: transition "Q[0,1]": must start with D or C`},
		{"double-space.sched", "testdata/bad/double-space.sched:7: empty transition"},
		{"no-body.sched", "testdata/bad/no-body.sched:7: a schedule line is an ID, a space and the transitions"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, _, err := ReadAll(filepath.Join("testdata", "bad", tt.file))
			if err == nil {
				t.Fatal("read without error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	_, _, err := ReadAll("testdata/no-such.sched")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error = %v, want one wrapping os.ErrNotExist", err)
	}
}

// TestRoundTrip writes every DRM's schedules and reads them back: the same IDs and transitions,
// and the same bytes when written again from what was read.
func TestRoundTrip(t *testing.T) {
	for _, d := range drms.Builtin() {
		p := aem.Params{Ops: 2, Replicas: 3}
		if d.Name == "sclr" {
			p.Replicas = 2
		}
		t.Run(d.Name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := Generate(&buf, d, p, "test", 0)
			if err != nil {
				t.Fatal(err)
			}
			file := buf.String()
			r, err := NewReader(strings.NewReader(file), d.Name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Header.DRM.Name != d.Name || r.Header.Params != p || r.Header.Count != n || r.Header.Generator != "test" {
				t.Fatalf("header = %+v", r.Header)
			}
			var again bytes.Buffer
			if err := WriteHeader(&again, r.Header); err != nil {
				t.Fatal(err)
			}
			for {
				s, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				body := Body(s.Steps)
				if id := ID(d.Name, p, body); id != s.ID {
					t.Fatalf("line %d: ID %s, recomputed %s", s.Line, s.ID, id)
				}
				again.WriteString(s.ID + " " + string(body) + "\n")
			}
			if again.String() != file {
				t.Fatal("writing what was read does not give the same file")
			}
		})
	}
}

func TestGenerateLimit(t *testing.T) {
	d, _ := drms.Lookup("qcz")
	var buf bytes.Buffer
	n, err := Generate(&buf, d, aem.Params{Ops: 3, Replicas: 3}, "test", 10)
	if err != nil || n != 10 {
		t.Fatalf("Generate = %d, %v; want 10 schedules", n, err)
	}
	_, all, err := readString(t, buf.String())
	if err != nil || len(all) != 10 {
		t.Fatalf("read back %d schedules, err %v", len(all), err)
	}
}

// TestIDsStable pins the IDs of a small file: an ID must never change between runs, machines or
// versions, or resuming a campaign would run everything again.
func TestIDsStable(t *testing.T) {
	d, _ := drms.Lookup("qcz")
	var buf bytes.Buffer
	if _, err := Generate(&buf, d, aem.Params{Ops: 1, Replicas: 3}, "modulo 0.1.0", 0); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/qcz-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(golden) {
		t.Fatalf("generated:\n%s\nwant testdata/qcz-1x3.sched:\n%s", buf.String(), golden)
	}
}

func readString(t *testing.T, file string) (Header, []Schedule, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(file), "test")
	if err != nil {
		return Header{}, nil, err
	}
	var all []Schedule
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header, all, nil
		}
		if err != nil {
			return r.Header, all, err
		}
		all = append(all, s)
	}
}

// FuzzReader feeds the reader arbitrary files: it must never panic, every error must be one
// FILE:LINE line, and whatever it accepts must be a valid file it would write itself.
func FuzzReader(f *testing.F) {
	for _, name := range []string{"testdata/qcz-1x3.sched", "testdata/ssr-1x3.sched"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, file string) {
		h, all, err := readString(t, file)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FileError", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if uint64(len(all)) != h.Count {
			t.Fatalf("accepted %d schedules, header says %d", len(all), h.Count)
		}
		for _, s := range all {
			if ID(h.DRM.Name, h.Params, Body(s.Steps)) != s.ID {
				t.Fatalf("accepted schedule %s whose ID does not match", s.ID)
			}
		}
	})
}
