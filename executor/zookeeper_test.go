package executor_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// TestZooKeeperSharedPrefixFindsTruncation: ZooKeeper 3.8.0's convergence failure (schedule
// 9f04dcda77776788 of Q/C/Z ops=2: a follower truncates a write that the other follower keeps)
// is found with the cluster restored from the run of the schedule before it, which shares its
// first three steps, as it is from scratch.
func TestZooKeeperSharedPrefixFindsTruncation(t *testing.T) {
	plugintest.Servers(t)
	const saver, failing = "e244af80baa7ba59", "9f04dcda77776788"
	pluginDir := plugintest.BuildPlugin(t, "zookeeper", "github.com/modulo-testing/modulo/plugins/zookeeper")
	file, _ := writeSchedules(t, t.TempDir(), "qcz", 2, 3)
	for _, share := range []bool{true, false} {
		resultsDir := t.TempDir()
		var out, errOut bytes.Buffer
		one := 1
		err := run.Run(&run.Options{Out: &out, ErrOut: &errOut, Context: context.Background(), File: file, IDs: []string{saver, failing},
			Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: &one, SharePrefixes: &share}})
		if err == nil || !strings.Contains(out.String(), "schedules: 2, pass: 1, fail: 1") {
			t.Fatalf("share %v: %v; output %s\n%s", share, err, out.String(), errOut.String())
		}
		recs, err := results.ReadRecords(filepath.Join(resultsDir, "qcz", results.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ID != failing {
				continue
			}
			restored := r.Restored != nil && r.Restored.Steps == 3 && r.Restored.From == saver && r.Restored.Digest != ""
			if r.Verdict != oracle.Fail || r.Step != 4 || restored != share {
				t.Errorf("share %v: %s %s after step %d, restored %+v; want a fail after step 4, restored from %s's run when shared", share, r.Verdict, r.Detail, r.Step, r.Restored, saver)
			}
		}
	}
}
