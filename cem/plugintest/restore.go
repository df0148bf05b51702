//go:build linux

package plugintest

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// restore checks that a restored cluster is the same test as the one it was saved from: a
// schedule runs to a restore point, is saved, and runs on to its end; then a new cluster on the
// same ports is restored from the save and runs the same steps. The files restored must be
// those the prefix left, byte for byte (digested here, apart from what the plugin says), the
// steps after the restore point must take the same actions (process IDs and the cluster's
// directory aside), and both clusters must end with the same data, converged (diverged, for a
// schedule that Config.Known keeps).
func (s *suite) restore(t *testing.T, plan Plan) {
	steps, k := restorable(s.drm.Model, s.params, plan)
	if k == 0 {
		t.Skipf("no schedule of the plan has every server down before its end")
	}
	t.Logf("schedule %s, restored after step %d", schedules.Body(steps), k)
	p := s.cfg.New()
	r, ok := p.(cem.Restorer)
	if !ok {
		t.Fatalf("Info says the plugin restores clusters, but it implements no cem.Restorer")
	}
	save := t.TempDir()

	a := s.newCluster(t, p, s.cfg.PluginConfig, steps)
	if err := a.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	s.applyAll(t, a, steps[:k])
	var saved cem.Saved
	if err := a.call(t, "save", func(ctx context.Context) (err error) {
		saved, err = r.Save(ctx, save)
		return err
	}); err != nil {
		t.Fatalf("save after step %d: %v", k, err)
	}
	left, err := fsutil.Digest(a.spec.Dir, topLevel(saved.Paths))
	if err != nil {
		t.Fatal(err)
	}
	if left.Digest != saved.Digest || len(saved.Paths) == 0 {
		t.Fatalf("the plugin saved %d paths with sha256 %s; the prefix left sha256 %s", len(saved.Paths), saved.Digest, left.Digest)
	}
	t.Logf("saved %d paths, %d bytes of data, sha256 %s", len(saved.Paths), saved.Bytes, saved.Digest)
	fromScratch := s.runOn(t, "the saved run", a, steps, k)
	a.teardownChecked(t)

	b := s.newCluster(t, p, s.cfg.PluginConfig, steps)
	b.spec.BasePort = a.spec.BasePort // a server may have stored its peers' addresses
	texts := make([]string, k)
	for i := range texts {
		texts[i] = steps[i].String()
	}
	var restored cem.Restored
	if err := b.call(t, "restore", func(ctx context.Context) (err error) {
		restored, err = r.Restore(ctx, b.spec, save, texts)
		return err
	}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	got, err := fsutil.Digest(b.spec.Dir, topLevel(saved.Paths))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != saved.Digest || restored.Digest != saved.Digest || !slices.Equal(got.Paths, left.Paths) {
		t.Fatalf("restored sha256 %s (the plugin says %s), saved %s; paths %v, saved %v", got.Digest, restored.Digest, saved.Digest, got.Paths, left.Paths)
	}
	fromRestore := s.runOn(t, "the restored run", b, steps, k)

	if !slices.Equal(fromScratch.actions, fromRestore.actions) {
		t.Errorf("the steps after the restore point took other actions than the run that saved it:\nsaved run:\n  %s\nrestored run:\n  %s",
			strings.Join(fromScratch.actions, "\n  "), strings.Join(fromRestore.actions, "\n  "))
	}
	for _, run := range []ran{fromScratch, fromRestore} {
		s.checkEnd(t, run.name, steps, run.snap)
	}
	if d := oracle.Compare(cem.Snapshot{Replicas: []cem.ReplicaData{fromScratch.snap.Replicas[0], fromRestore.snap.Replicas[0]}}); !d.Converged() {
		t.Errorf("the saved run and the restored one end with other data: %s", d.Line())
	}
}

// ran is what running a schedule's steps after a restore point showed.
type ran struct {
	name    string
	actions []string // normalised
	snap    cem.Snapshot
}

// runOn realises steps[k:] on c, the run called name, and returns their actions, normalised,
// and the data.
func (s *suite) runOn(t *testing.T, name string, c *cluster, steps []aem.Transition, k int) ran {
	t.Helper()
	r := ran{name: name}
	for i := k; i < len(steps); i++ {
		rep, err := c.apply(t, i, &steps[i])
		if err != nil {
			t.Fatalf("%s: step %d %s: %v", r.name, i+1, steps[i], err)
		}
		for _, a := range rep.Actions {
			r.actions = append(r.actions, fmt.Sprintf("step %d replica %d: %s", i+1, a.Replica, normalise(a.What, c.spec.Dir)))
		}
	}
	r.snap = c.read(t)
	return r
}

var (
	pidRE       = regexp.MustCompile(`(pid|process group) \d+`)
	numberRE    = regexp.MustCompile(`\d+(\.\d+)?(µs|ms|s)?`)
	powerLossRE = regexp.MustCompile(`(power loss of [^:]+): .*`)
)

// normalise takes out of an action what differs between two runs of the same step: process
// IDs, the cluster's directory, and what a power loss dropped and the file systems' counts,
// which depend on when the servers wrote and synced.
func normalise(what, dir string) string {
	what = pidRE.ReplaceAllString(strings.ReplaceAll(what, dir, "<dir>"), "$1 N")
	if strings.HasPrefix(what, "file systems: ") {
		what = numberRE.ReplaceAllString(what, "N")
	}
	return powerLossRE.ReplaceAllString(what, "$1: ...")
}

// restorable picks the plan's schedule with the latest restore point and returns it with the
// length of the prefix to restore; 0 when none has one.
func restorable(m aem.Model, p aem.Params, plan Plan) ([]aem.Transition, int) {
	var best []aem.Transition
	k := 0
	for _, sc := range plan.Schedules {
		if pts := schedules.RestorePoints(m, p, sc.Steps); len(pts) > 0 && pts[len(pts)-1] > k {
			best, k = sc.Steps, pts[len(pts)-1]
		}
	}
	return best, k
}

// topLevel keeps the paths that no other path of paths lies under: what a save names.
func topLevel(paths []string) []string {
	var top []string
	for _, p := range paths {
		if !slices.ContainsFunc(top, func(t string) bool { return strings.HasPrefix(p, t+string(filepath.Separator)) }) {
			top = append(top, p)
		}
	}
	return top
}
