package results_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

var campaign = results.Campaign{
	DRM: "ssr", Ops: 1, Replicas: 3, ScheduleFile: "ssr.sched", ScheduleSHA256: "ab",
	Plugin: "redis", PluginVersion: "0.1.0", ServerVersion: "7.0.15", Modulo: "0.1.0",
	Started: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
}

func record(id string, v oracle.Verdict) results.Record {
	return results.Record{
		ID: id, DRM: "ssr", Verdict: v, Plugin: "redis", PluginVersion: "0.1.0", ServerVersion: "7.0.15",
		Start: campaign.Started, End: campaign.Started.Add(time.Second), StepsMS: []float64{1.5, 2},
	}
}

// childEnv makes the test binary a child that appends records to the directory it names,
// acknowledging each on stdout, until it is killed.
const childEnv = "RESULTS_TEST_APPEND_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		appendForever(dir)
		return
	}
	os.Exit(m.Run())
}

func appendForever(dir string) {
	st, err := results.Open(dir, campaign)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		r := record(fmt.Sprintf("%016x", i), oracle.Fail)
		// Long details make each write big, so that a kill can land in the middle of one.
		r.Detail = strings.Repeat("d", 1+(i%7)*40000)
		if err := st.Append(r); err != nil {
			fmt.Println("append:", err)
			os.Exit(1)
		}
		fmt.Printf("ok %d\n", i)
	}
}

func openStore(t *testing.T, dir string, c results.Campaign) *results.Store {
	t.Helper()
	st, err := results.Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestAppendAndRead(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, campaign)
	want := []results.Record{record("0000000000000001", oracle.Pass), record("0000000000000002", oracle.Fail)}
	want[1].Detail = "1 key differs: key:1"
	for _, r := range want {
		if err := st.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Detail != want[1].Detail || !got[0].Start.Equal(want[0].Start) || got[1].StepsMS[0] != 1.5 {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if v, ok := st.Recorded("0000000000000002"); !ok || v != oracle.Fail {
		t.Errorf("Recorded = %v %v", v, ok)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], `{"id":"0000000000000001","drm":"ssr","verdict":"pass",`) {
		t.Errorf("records.jsonl:\n%s", b)
	}
}

func TestTornLastRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, results.RecordsFile)
	good, err := json.Marshal(record("0000000000000001", oracle.Pass))
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"id":"0000000000000002","drm":"ssr","verd`
	if err := os.WriteFile(path, []byte(string(good)+"\n"+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := results.ReadRecords(path)
	if err != nil || len(rs) != 1 {
		t.Fatalf("ReadRecords = %d records, %v; want the torn one ignored", len(rs), err)
	}

	st := openStore(t, dir, campaign)
	if _, ok := st.Recorded("0000000000000002"); ok {
		t.Error("the torn record counts as recorded")
	}
	if err := st.Append(record("0000000000000003", oracle.Fail)); err != nil {
		t.Fatal(err)
	}
	rs, err = results.ReadRecords(path)
	if err != nil || len(rs) != 2 || rs[1].ID != "0000000000000003" {
		t.Fatalf("after resuming: %+v, %v", rs, err)
	}
}

func TestCorruptRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, results.RecordsFile)
	if err := os.WriteFile(path, []byte("{\"id\":\"1\"}\nnot json\n{\"id\":\"2\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := results.ReadRecords(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: not a record, skipped: ") {
		t.Fatalf("error = %v, want one naming line 2", err)
	}
	// A run resumes past the bad line, keeps it, says so, and appends after the last record.
	st, err := results.Open(dir, campaign)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Skipped) != 1 || !strings.HasPrefix(st.Skipped[0], path+":2: not a record, skipped: ") {
		t.Errorf("Skipped = %q, want line 2", st.Skipped)
	}
	if err := st.Append(results.Record{ID: "3", Verdict: oracle.Pass}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rs, skipped, err := results.ReadRecordsSkipping(path)
	if err != nil || len(rs) != 3 || len(skipped) != 1 {
		t.Errorf("after the append: %d records, skipped %q, %v; want 3 and line 2", len(rs), skipped, err)
	}
}

// TestKilledWriter kills a process appending records at an arbitrary moment: every record it
// acknowledged must be there and every line must read, but for at most a torn last one.
func TestKilledWriter(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		acked := -1
		for acked < 20+round*15 && sc.Scan() {
			n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ok "))
			if err != nil {
				t.Fatalf("child: %s", sc.Text())
			}
			acked = n
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		rs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(rs) <= acked {
			t.Fatalf("round %d: %d records after %d were acknowledged", round, len(rs), acked+1)
		}
		for i, r := range rs {
			if r.ID != fmt.Sprintf("%016x", i) {
				t.Fatalf("round %d: record %d is %s", round, i, r.ID)
			}
		}
		st := openStore(t, dir, campaign)
		if err := st.Append(record("ffffffffffffffff", oracle.Pass)); err != nil {
			t.Fatal(err)
		}
		after, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
		if err != nil || len(after) != len(rs)+1 {
			t.Fatalf("round %d: after resuming %d records, %v; want %d", round, len(after), err, len(rs)+1)
		}
	}
}

func TestResumeOnlySameVersions(t *testing.T) {
	dir := t.TempDir()
	st, err := results.Open(dir, campaign)
	if err != nil {
		t.Fatal(err)
	}
	other := func(f func(*results.Record)) results.Record {
		r := record("", oracle.Pass)
		f(&r)
		return r
	}
	for _, r := range []results.Record{
		other(func(r *results.Record) { r.ID = "a" }),
		other(func(r *results.Record) { r.ID = "b"; r.ServerVersion = "6.2.0" }),
		other(func(r *results.Record) { r.ID = "c"; r.PluginVersion = "0.0.9" }),
		other(func(r *results.Record) { r.ID = "d"; r.Plugin = "other" }),
		other(func(r *results.Record) { r.ID = "e"; r.DRM = "slr" }),
		other(func(r *results.Record) { r.ID = "f"; r.Verdict = oracle.Error }),
		other(func(r *results.Record) { r.ID = "f"; r.Verdict = oracle.Fail }), // the later record counts
		other(func(r *results.Record) { r.ID = "g"; r.Verdict = oracle.Incomplete }),
		other(func(r *results.Record) { r.ID = "g"; r.Verdict = oracle.Error }), // errors are retried
		other(func(r *results.Record) { r.ID = "h"; r.Verdict = oracle.Error }),
	} {
		if err := st.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	later := campaign
	later.Started = campaign.Started.Add(time.Hour)
	st = openStore(t, dir, later)
	if n := st.RecordedCount(); n != 2 {
		t.Errorf("RecordedCount = %d, want 2", n)
	}
	for id, want := range map[string]oracle.Verdict{"a": oracle.Pass, "f": oracle.Fail} {
		if v, ok := st.Recorded(id); !ok || v != want {
			t.Errorf("Recorded(%s) = %v %v, want %v", id, v, ok, want)
		}
	}
	c, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Started.Equal(campaign.Started) || !c.Resumed.Equal(later.Started) {
		t.Errorf("campaign.json started %v resumed %v, want %v and %v", c.Started, c.Resumed, campaign.Started, later.Started)
	}
}

func TestOpenOtherCampaign(t *testing.T) {
	withFile := func(drm, file, sum string) results.Campaign {
		c := campaign
		c.DRM, c.ScheduleFile, c.ScheduleSHA256 = drm, file, sum
		return c
	}
	fourReplicas := campaign
	fourReplicas.Replicas = 4
	with := func(change func(c *results.Campaign)) results.Campaign {
		c := campaign
		change(&c)
		return c
	}
	tests := []struct {
		name        string
		first, then results.Campaign
		want        string // after the directory's name
	}{
		{"other parameters", campaign, fourReplicas,
			": results directory holds another campaign (ssr ops=1 replicas=3, not ssr ops=1 replicas=4); choose another results directory"},
		{"other schedule file", withFile("ssr", "a/x.sched", "aaaa"), withFile("ssr", "b/x.sched", "bbbb"),
			": results directory holds another campaign: it ran a/x.sched (SHA-256 aaaa), not b/x.sched (SHA-256 bbbb); choose another results directory"},
		{"S/CL/R file from before the model's correction", withFile("sclr", "x.sched", "aaaa"), withFile("sclr", "x.sched", "bbbb"),
			": results directory holds another campaign: it ran x.sched (SHA-256 aaaa), not x.sched (SHA-256 bbbb) (S/CL/R schedules and their IDs changed on 2026-11-23, when the model was corrected to the reference generator's: a campaign of an older S/CL/R file cannot go on with a file generated since); choose another results directory"},
	}
	tests = append(tests, []struct {
		name        string
		first, then results.Campaign
		want        string
	}{
		{"another plugin build", campaign, with(func(c *results.Campaign) { c.PluginVersion = "0.1.0+3f2a9c01b7de" }),
			`: results directory holds another campaign: it ran with plugin ` + campaign.Plugin + ` version ` + campaign.PluginVersion + `, not 0.1.0+3f2a9c01b7de (a plugin built anew is a new version); run with the campaign's configuration, or choose another results directory`},
		{"another server", campaign, with(func(c *results.Campaign) { c.ServerVersion = "7.2.4" }),
			`: results directory holds another campaign: it ran with server ` + campaign.ServerVersion + `, not 7.2.4; run with the campaign's configuration, or choose another results directory`},
		{"another plugin configuration", with(func(c *results.Campaign) { c.PluginConfig = "break_realisation = \"skip-relink\"\n" }), campaign,
			`: results directory holds another campaign: it ran with plugin configuration "break_realisation = \"skip-relink\"", not ""; run with the campaign's configuration, or choose another results directory`},
		{"another check", with(func(c *results.Campaign) { c.Check = oracle.End }), with(func(c *results.Campaign) { c.Check = oracle.EveryConvergence }),
			`: results directory holds another campaign: it ran with check = "end", not "every-convergence"; run with the campaign's configuration, or choose another results directory`},
		{"a campaign from before the check setting", campaign, with(func(c *results.Campaign) { c.Check = oracle.EveryConvergence }),
			`: results directory holds another campaign: it ran with check = "end", not "every-convergence"; run with the campaign's configuration, or choose another results directory`},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := openStore(t, dir, tt.first).Close(); err != nil {
				t.Fatal(err)
			}
			_, err := results.Open(dir, tt.then)
			if !errors.Is(err, results.ErrOtherCampaign) {
				t.Fatalf("error = %v, want ErrOtherCampaign", err)
			}
			if err.Error() != dir+tt.want {
				t.Errorf("error = %q, want %q", err, dir+tt.want)
			}
		})
	}
}

func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, campaign)
	if _, err := results.Open(dir, campaign); err == nil || err.Error() != "results directory "+dir+" is in use by another modulo run" {
		t.Fatalf("second Open: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	openStore(t, dir, campaign) // free again once closed
}
