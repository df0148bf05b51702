// Package slurm_test runs deploy/slurm on a real Slurm: a one-node cluster of the test's own
// (Debian's slurm-wlm and munge, as scripts/setup installs them), started and stopped by the
// test, runs a Redis campaign as a 4-task array and merges it, and the merged campaign must
// hold every schedule once, with the verdicts that one machine's run of the file found.
package slurm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// cluster is a running one-node Slurm cluster.
type cluster struct {
	dir     string
	conf    string
	daemons []*exec.Cmd // munged, slurmctld, slurmd
}

// env is the environment of a command that talks to the cluster.
func (c *cluster) env(vars ...string) []string {
	return append(append(os.Environ(), "SLURM_CONF="+c.conf), vars...)
}

// command runs a Slurm client command and returns its output.
func (c *cluster) command(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// startCluster starts munged, slurmctld and slurmd with a configuration of their own, and waits
// until the node takes jobs; the cluster is stopped when t ends.
func startCluster(t *testing.T, ctx context.Context, ctldPort int) *cluster {
	t.Helper()
	// The daemons live in /usr/sbin, which a user's PATH may lack.
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin")
	for _, bin := range []string{"mungekey", "munged", "munge", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: scripts/setup installs Slurm (slurm-wlm) and munge", bin)
		}
	}
	// munged wants every directory above its socket searchable by all.
	dir, err := os.MkdirTemp("", "modulo-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	for _, sub := range []string{"munge", "state", "spool", "log", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template.Must(template.ParseFiles(filepath.Join("testdata", "slurm.conf.tmpl")))
	var conf bytes.Buffer
	if err := tmpl.Execute(&conf, map[string]any{
		"Dir": dir, "CtldPort": ctldPort, "SlurmdPort": ctldPort + 1, "User": u.Username, "CPUs": runtime.NumCPU(),
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.conf, conf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })

	munge := filepath.Join(dir, "munge")
	socket := filepath.Join(munge, "munge.socket")
	if out, err := exec.Command("mungekey", "--create", "--keyfile="+filepath.Join(munge, "munge.key")).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v: %s", err, out)
	}
	c.start(t, "munged", "--foreground", "--socket="+socket, "--key-file="+filepath.Join(munge, "munge.key"),
		"--pid-file="+filepath.Join(munge, "munged.pid"), "--log-file="+filepath.Join(munge, "munged.log"),
		"--seed-file="+filepath.Join(munge, "munged.seed"))
	waitFor(t, ctx, "munged's socket", func() bool {
		return exec.Command("sh", "-c", `munge -n -S "$0" | unmunge -S "$0"`, socket).Run() == nil
	})
	c.start(t, "slurmctld", "-D")
	c.start(t, "slurmd", "-D", "-N", "node1")
	waitFor(t, ctx, "the Slurm node to be idle", func() bool {
		out, err := c.command(ctx, "sinfo", "-h", "-n", "node1", "-o", "%T")
		return err == nil && strings.TrimSpace(out) == "idle"
	})
	return c
}

// start starts a daemon in the foreground, in a process group of its own, killed if the test
// dies.
func (c *cluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.env()
	log, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.daemons = append(c.daemons, cmd)
}

// stop cancels every job and waits for them to end (a job's processes outlive slurmd), then
// ends the daemons, last started first, and fails t if a process of the cluster is left.
func (c *cluster) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(c.daemons) == 3 {
		if out, err := c.command(ctx, "squeue", "-h", "-o", "%A"); err == nil && strings.TrimSpace(out) != "" {
			c.command(ctx, "scancel", strings.Fields(out)...)
			for ctx.Err() == nil {
				if out, err := c.command(ctx, "squeue", "-h", "-o", "%A"); err != nil || strings.TrimSpace(out) == "" {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	for _, d := range slices.Backward(c.daemons) {
		syscall.Kill(-d.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-d.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if left := c.processes(); len(left) > 0 {
		t.Errorf("processes of the Slurm cluster left running: %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if t.Failed() {
		for _, name := range []string{"slurmctld.log", "slurmd.log"} {
			if b, err := os.ReadFile(filepath.Join(c.dir, "log", name)); err == nil {
				t.Logf("%s:\n%s", name, tail(string(b), 30))
			}
		}
	}
}

// processes returns the processes that run with the cluster's configuration: the daemons,
// slurmstepd and the jobs' processes all inherit SLURM_CONF.
func (c *cluster) processes() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return string(v) == "SLURM_CONF="+c.conf }) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// jobStates returns the state and exit code of each of a job's tasks, by task ID ("" for a job
// that is no array).
func (c *cluster) jobStates(ctx context.Context, id string) (map[string]string, error) {
	out, err := c.command(ctx, "scontrol", "-o", "show", "job", id)
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	re := regexp.MustCompile(`(?:ArrayTaskId=(\d+) .*)?JobState=(\S+) .*ExitCode=(\S+)`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("scontrol show job %s: %q", id, line)
		}
		states[m[1]] = m[2] + " " + m[3]
	}
	return states, nil
}

// ended tells whether a job state is final.
func ended(state string) bool {
	s, _, _ := strings.Cut(state, " ")
	return !slices.Contains([]string{"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}, s)
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// verdicts returns each schedule's holding verdict in a campaign directory, and how many
// records name it.
func verdicts(t *testing.T, dir string) (map[string]oracle.Verdict, map[string]int) {
	t.Helper()
	s, err := results.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	vs, n := map[string]oracle.Verdict{}, map[string]int{}
	for _, r := range s.Latest {
		vs[r.ID] = r.Verdict
	}
	for _, r := range s.All {
		n[r.ID]++
	}
	return vs, n
}

// TestArrayCampaign: deploy/slurm/submit runs S/L/R ops=2 on three replicas (90 schedules) as
// a 4-task array on real Redis servers, then merges it: every schedule once, with the
// verdicts of a run of the whole file on this machine.
func TestArrayCampaign(t *testing.T) {
	slurmPorts := plugintest.FreePorts(t, 2) // Slurm's own; Redis runs in network namespaces, on its own port
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := plugintest.BuildModulo(t, "redis")
	modulo := filepath.Join(bin, "modulo")
	work, err := os.MkdirTemp("", "modulo-slurm-work-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	file := filepath.Join(work, "slr.sched")
	if out, err := exec.Command(modulo, "gen", "--drm", "slr", "--ops", "2", "--replicas", "3", "-o", file).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v: %s", err, out)
	}
	_, all, err := schedules.ReadAll(file)
	if err != nil {
		t.Fatal(err)
	}

	single := exec.CommandContext(ctx, modulo, "run", file, "--results-dir", filepath.Join(work, "one-machine"),
		"--workers", "2")
	if out, err := single.CombinedOutput(); err != nil && single.ProcessState.ExitCode() != 1 {
		t.Fatalf("one machine's run: %v\n%s", err, out)
	}
	want, _ := verdicts(t, filepath.Join(work, "one-machine", "slr"))
	if len(want) != len(all) {
		t.Fatalf("one machine's run recorded %d schedules of %d", len(want), len(all))
	}

	c := startCluster(t, ctx, slurmPorts)
	submit, err := filepath.Abs("submit")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, submit, file, "4", filepath.Join(work, "results"), "--cpus-per-task=1")
	cmd.Dir = work
	cmd.Env = c.env("MODULO=" + modulo)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`^shards: job (\d+) \(array 0-3\); merge: job (\d+), into (\S+)\n$`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("submit said %q", out)
	}
	shardsJob, mergeJob, merged := m[1], m[2], m[3]
	var states map[string]string
	waitFor(t, ctx, "the merge job", func() bool {
		states, err = c.jobStates(ctx, mergeJob)
		return err == nil && ended(states[""])
	})
	logs, _ := filepath.Glob(filepath.Join(work, "modulo-*.out"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", filepath.Base(l), tail(string(b), 12))
	}
	if states[""] != "COMPLETED 0:0" {
		t.Errorf("merge job %s: %s", mergeJob, states[""])
	}
	tasks, err := c.jobStates(ctx, shardsJob)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"0", "1", "2", "3"} {
		if tasks[k] != "COMPLETED 0:0" {
			t.Errorf("shard task %s: %q", k, tasks[k])
		}
	}

	got, records := verdicts(t, merged)
	for _, s := range all {
		if records[s.ID] != 1 || got[s.ID] != want[s.ID] {
			t.Errorf("schedule %s: %d records in the merge, verdict %q; one machine's run: %q", s.ID, records[s.ID], got[s.ID], want[s.ID])
		}
	}
	if len(got) != len(all) {
		t.Errorf("the merge holds %d schedules, the file %d", len(got), len(all))
	}
	for k := range 4 {
		c, err := results.ReadCampaign(filepath.Join(work, "results", fmt.Sprintf("slr.shard-%d-of-4", k+1), results.CampaignFile))
		if err != nil || c.Shard == nil || c.Shard.Index != k || c.Shard.Count != 4 {
			t.Errorf("shard %d's campaign: %+v, %v", k+1, c.Shard, err)
		}
	}
}
