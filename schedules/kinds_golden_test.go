package schedules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

var updateDigests = flag.Bool("update-digests", false, "rewrite testdata/files.sha256 from the schedule files generated now")

// digestsFile holds the SHA-256 of every schedule file TestFilesUnchanged writes: each line
// "DIGEST  DRM ops=O replicas=R schedules=N". Regenerate it, only for a change of the models
// that is meant to change schedules and IDs, with
//
//	go test ./schedules/ -run TestFilesUnchanged -update-digests
const digestsFile = "testdata/files.sha256"

// goldenFiles are the files whose bytes must not change: every built-in DRM, and a model of
// each rule set that plugins declare (pgl and mdl are crash-link, qcn quorum, qcnn
// crash-partition), at the sizes that campaigns run.
func goldenFiles(t *testing.T) []struct {
	d drms.DRM
	p aem.Params
} {
	t.Helper()
	var files []struct {
		d drms.DRM
		p aem.Params
	}
	add := func(d drms.DRM, sizes ...aem.Params) {
		for _, p := range sizes {
			files = append(files, struct {
				d drms.DRM
				p aem.Params
			}{d, p})
		}
	}
	quorum := []aem.Params{{Ops: 1, Replicas: 3}, {Ops: 2, Replicas: 3}, {Ops: 3, Replicas: 3}, {Ops: 1, Replicas: 5}, {Ops: 2, Replicas: 5}}
	for _, d := range drms.Builtin() {
		switch {
		case d.Model.Rules() == aem.CrashPartitionRules:
			add(d, aem.Params{Ops: 1, Replicas: 3}, aem.Params{Ops: 2, Replicas: 3}, aem.Params{Ops: 1, Replicas: 5})
		case d.Model.Rules() == aem.QuorumRules:
			add(d, quorum...)
		case d.Model.Rules() == aem.CrashLinkRules:
			add(d, aem.Params{Ops: 1, Replicas: 2}, aem.Params{Ops: 2, Replicas: 2}, aem.Params{Ops: 1, Replicas: 3})
		default:
			add(d, aem.Params{Ops: 1, Replicas: 3}, aem.Params{Ops: 2, Replicas: 3})
		}
	}
	for _, decl := range []struct{ name, title, rules string }{
		{"pgl", "S/CL/P", "crash-link"}, {"qcn", "Q/C/N", "quorum"}, {"qcnn", "Q/CN/N", "crash-partition"},
	} {
		d, err := drms.Declare("test", decl.name, decl.title, decl.rules, "test", "", aem.Params{Ops: 1, Replicas: 3}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		add(d, aem.Params{Ops: 1, Replicas: 3}, aem.Params{Ops: 2, Replicas: 3})
	}
	return files
}

// TestFilesUnchanged checks that every existing DRM's schedule files are byte for byte what
// they were when their digests were recorded: a change of the models that adds failure kinds
// must keep every schedule, its order and its ID.
func TestFilesUnchanged(t *testing.T) {
	var got strings.Builder
	for _, f := range goldenFiles(t) {
		var buf bytes.Buffer
		n, err := Generate(&buf, f.d, f.p, "modulo", 0)
		if err != nil {
			t.Fatalf("%s %+v: %v", f.d.Name, f.p, err)
		}
		sum := sha256.Sum256(buf.Bytes())
		fmt.Fprintf(&got, "%s  %s ops=%d replicas=%d schedules=%d\n", hex.EncodeToString(sum[:]), f.d.Name, f.p.Ops, f.p.Replicas, n)
	}
	if *updateDigests {
		if err := os.WriteFile(filepath.FromSlash(digestsFile), []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.FromSlash(digestsFile))
	if err != nil {
		t.Fatal(err)
	}
	wantLines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		digest, what, _ := strings.Cut(l, "  ")
		wantLines[what] = digest
	}
	for _, l := range strings.Split(strings.TrimSpace(got.String()), "\n") {
		digest, what, _ := strings.Cut(l, "  ")
		switch w, ok := wantLines[what]; {
		case !ok:
			t.Errorf("%s: no digest recorded in %s", what, digestsFile)
		case w != digest:
			t.Errorf("%s: the file generated now has SHA-256 %s, recorded %s", what, digest, w)
		}
		delete(wantLines, what)
	}
	for what := range wantLines {
		t.Errorf("%s: recorded in %s, generated no more", what, digestsFile)
	}
}
