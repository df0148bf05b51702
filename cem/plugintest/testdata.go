package plugintest

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/schedules"
)

// KeptSchedule reads the first schedule of a file kept in a plugin's testdata, "ID body" after
// comment lines, as a finding is kept, and checks that ID is the schedule's own for drm with
// params: the schedule is the one modulo gen wrote, not one written by hand.
func KeptSchedule(t testing.TB, path, drm string, params Params) (string, []aem.Transition) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, body, _ := strings.Cut(line, " ")
		steps, err := schedules.ParseBody(body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := schedules.ID(drm, params, schedules.Body(steps)); got != id {
			t.Fatalf("%s: schedule %s has ID %s, the file says %s", path, body, got, id)
		}
		return id, steps
	}
	t.Fatalf("%s holds no schedule", path)
	return "", nil
}

// ReplayKept runs the kept schedule id (KeptSchedule) on a cluster of p configured by its TOML
// section pluginConfig (nil for its defaults), in a directory of t's, on ports reserved for t,
// with the executor's step timeout, and returns the cluster's spec and each step's report; a
// step that fails fails t. The cluster is torn down when t ends. Under -short it skips t.
func ReplayKept(t *testing.T, p cem.CEM, pluginConfig []byte, drm string, params Params, id string, steps []aem.Transition) (cem.ClusterSpec, []cem.StepReport) {
	t.Helper()
	Servers(t)
	ctx := context.Background()
	info, err := p.Info(ctx, pluginConfig)
	if err != nil {
		t.Fatal(err)
	}
	spec := cem.ClusterSpec{DRM: drm, Ops: params.Ops, Replicas: params.Replicas, Dir: ClusterDir(t),
		BasePort:   ReservePorts(t, info.Capabilities.Ports(params.Replicas)),
		ScheduleID: id, StepTimeout: cem.DefaultStepTimeout, Config: pluginConfig}
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(context.Background()) })
	var reports []cem.StepReport
	for i, tr := range steps {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()})
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, tr, err)
		}
		reports = append(reports, rep)
	}
	return spec, reports
}
