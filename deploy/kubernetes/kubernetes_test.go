// Package kubernetes_test checks what can be checked here of deploy/kubernetes, without a
// Kubernetes cluster or an image builder: that the manifests parse and agree with each other,
// with the image definition and with scripts/setup, and that the entrypoint runs the shard
// that JOB_COMPLETION_INDEX names and merges the shards, on real Redis servers.
package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/results"
)

// The parts of the manifests the test reads.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Image string   `yaml:"image"`
					Args  []string `yaml:"args"`
					Env   []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readManifests(t *testing.T, path string) []manifest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(false)
	var ms []manifest
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return ms
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ms = append(ms, m)
	}
}

// env returns a container's environment as a map.
func env(m manifest) map[string]string {
	vars := map[string]string{}
	for _, e := range m.Spec.Template.Spec.Containers[0].Env {
		vars[e.Name] = e.Value
	}
	return vars
}

// TestManifests: job.yaml's Indexed Job and merge-job.yaml's Job run the image the
// Dockerfile's build command names, the Indexed Job's shard count is its completions, both
// mount the claim job.yaml declares where MODULO_RESULTS points, and they agree on the
// campaign.
func TestManifests(t *testing.T) {
	docs := readManifests(t, "job.yaml")
	if len(docs) != 2 || docs[0].Kind != "PersistentVolumeClaim" || docs[1].Kind != "Job" {
		t.Fatalf("job.yaml holds %d documents; want a PersistentVolumeClaim and a Job", len(docs))
	}
	claim, shards := docs[0], docs[1]
	merges := readManifests(t, "merge-job.yaml")
	if len(merges) != 1 || merges[0].Kind != "Job" {
		t.Fatalf("merge-job.yaml holds %d documents; want a Job", len(merges))
	}
	merge := merges[0]

	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	tag := regexp.MustCompile(`docker build -f deploy/kubernetes/Dockerfile -t (\S+) \.`).FindSubmatch(dockerfile)
	if tag == nil {
		t.Fatal("the Dockerfile does not say how to build it (docker build -f deploy/kubernetes/Dockerfile -t IMAGE .)")
	}
	s := shards.Spec
	if s.CompletionMode != "Indexed" || s.Completions < 1 || s.Parallelism < 1 || s.Parallelism > s.Completions {
		t.Errorf("shards Job: completionMode %q, completions %d, parallelism %d", s.CompletionMode, s.Completions, s.Parallelism)
	}
	shardEnv, mergeEnv := env(shards), env(merge)
	if n, err := strconv.Atoi(shardEnv["MODULO_SHARD_COUNT"]); err != nil || n != s.Completions {
		t.Errorf("MODULO_SHARD_COUNT = %q, want the Job's completions, %d", shardEnv["MODULO_SHARD_COUNT"], s.Completions)
	}
	if _, set := shardEnv["JOB_COMPLETION_INDEX"]; set {
		t.Error("the shards Job sets JOB_COMPLETION_INDEX, which Kubernetes sets in each pod")
	}
	for _, v := range []string{"MODULO_SCHEDULES", "MODULO_GEN", "MODULO_RESULTS"} {
		if shardEnv[v] == "" || shardEnv[v] != mergeEnv[v] {
			t.Errorf("%s: %q in the shards Job, %q in the merge", v, shardEnv[v], mergeEnv[v])
		}
	}
	for _, j := range []struct {
		m    manifest
		args string
	}{{shards, "shard"}, {merge, "merge"}} {
		p := j.m.Spec.Template.Spec
		c := p.Containers[0]
		if c.Image != string(tag[1]) || strings.Join(c.Args, " ") != j.args {
			t.Errorf("%s: image %s %v; want %s %s", j.m.Metadata.Name, c.Image, c.Args, tag[1], j.args)
		}
		if p.RestartPolicy != "Never" {
			t.Errorf("%s: restartPolicy %q: a pod that ends must end (the Job retries it), Never", j.m.Metadata.Name, p.RestartPolicy)
		}
		if len(c.VolumeMounts) != 1 || len(p.Volumes) != 1 || c.VolumeMounts[0].Name != p.Volumes[0].Name ||
			p.Volumes[0].PersistentVolumeClaim.ClaimName != claim.Metadata.Name || c.VolumeMounts[0].MountPath != env(j.m)["MODULO_RESULTS"] {
			t.Errorf("%s: mounts %+v of volumes %+v; want the claim %s at MODULO_RESULTS", j.m.Metadata.Name, c.VolumeMounts, p.Volumes, claim.Metadata.Name)
		}
	}
}

// TestImageDefinition: the image builds with the Go release go.mod names, installs every
// server scripts/setup installs, and starts the entrypoint it copies.
func TestImageDefinition(t *testing.T) {
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if !bytes.Contains(dockerfile, []byte("FROM golang:"+string(goVersion[1])+"-")) {
		t.Errorf("the Dockerfile does not build with golang:%s, go.mod's release", goVersion[1])
	}
	setup, err := os.ReadFile("../../scripts/setup")
	if err != nil {
		t.Fatal(err)
	}
	install := regexp.MustCompile(`(?s)apt-get install.*?rm -rf /var/lib/apt/lists`).Find(dockerfile)
	for _, m := range regexp.MustCompile(`need\+=\(([a-z0-9.+-]+)\)\s*#?\s*([^\n]*)`).FindAllSubmatch(setup, -1) {
		pkg := string(m[1])
		// Tools of tests, and what scripts/build-zookeeper compiles releases with from the
		// sources beside a checkout, which the image has not: not servers.
		if slices.Contains([]string{"chromium", "slurm-wlm", "munge", "strace", "curl", "jq", "default-jdk-headless", "libjsr305-java", "libservlet-api-java"}, pkg) {
			continue
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(pkg) + `\b`).Match(install) {
			t.Errorf("scripts/setup installs %s, the image does not", pkg)
		}
	}
	if !bytes.Contains(dockerfile, []byte("COPY deploy/kubernetes/entrypoint.sh /usr/local/bin/modulo-entrypoint")) ||
		!bytes.Contains(dockerfile, []byte(`ENTRYPOINT ["/usr/local/bin/modulo-entrypoint"]`)) {
		t.Error("the image does not start the entrypoint it copies")
	}
}

// TestEntrypoint runs the entrypoint as the pods of a three-pod Indexed Job would, each with
// its JOB_COMPLETION_INDEX, on real Redis servers, then as the merge's pod: every schedule of
// the file is recorded once.
func TestEntrypoint(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "redis")
	dir := t.TempDir()
	run := func(arg string, vars ...string) string {
		t.Helper()
		cmd := exec.Command("./entrypoint.sh", arg)
		cmd.Env = append(os.Environ(),
			"MODULO="+filepath.Join(bin, "modulo"),
			"MODULO_SCHEDULES="+filepath.Join(dir, "campaign", "ssr.sched"),
			"MODULO_GEN=--drm ssr --ops 1 --replicas 3",
			"MODULO_RESULTS="+filepath.Join(dir, "results"),
			"MODULO_SHARD_COUNT=3",
			"MODULO_ARGS=--workers 1")
		cmd.Env = append(cmd.Env, vars...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("entrypoint %s %v: %v\n%s", arg, vars, err, out)
		}
		return string(out)
	}
	total := 0
	for k := range 3 {
		out := run("shard", "JOB_COMPLETION_INDEX="+strconv.Itoa(k))
		want := "as the Kubernetes Indexed Job (JOB_COMPLETION_INDEX=" + strconv.Itoa(k) + ", MODULO_SHARD_COUNT=3) said"
		if !strings.Contains(out, want) {
			t.Errorf("pod %d's output does not say %q:\n%s", k, want, out)
		}
		shardDir := filepath.Join(dir, "results", "ssr.shard-"+strconv.Itoa(k+1)+"-of-3")
		b, err := os.ReadFile(filepath.Join(shardDir, results.CampaignFile))
		if err != nil {
			t.Fatal(err)
		}
		var c results.Campaign
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		recs, err := results.ReadRecords(filepath.Join(shardDir, results.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		if c.Shard == nil || c.Shard.Index != k || c.Shard.Count != 3 || len(recs) != int(c.Schedules) {
			t.Errorf("pod %d wrote shard %+v, %d records of %d", k, c.Shard, len(recs), c.Schedules)
		}
		total += len(recs)
	}
	out := run("merge")
	if !strings.Contains(out, "24 records, 24 of 24 schedules with a verdict") || total != 24 {
		t.Errorf("the shards recorded %d schedules; the merge said:\n%s", total, out)
	}
	recs, err := results.ReadRecords(filepath.Join(dir, "results", "ssr", results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 24 {
		t.Errorf("the merged campaign holds %d distinct schedules of %d records, want 24", len(ids), len(recs))
	}
}
