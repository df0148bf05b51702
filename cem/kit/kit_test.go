package kit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
)

// configSystem checks the kit's configuration handling and Start's checks, all of which
// happen before any server starts: its servers are never started.
type configSystem struct {
	cfg struct {
		Server string `toml:"server"`
		Copies int    `toml:"copies"`
	}
}

func (s *configSystem) Configure(decode func(any) error) error {
	s.cfg.Server, s.cfg.Copies = "server", 1
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if s.cfg.Copies < 1 {
		return errors.New("copies must be at least 1")
	}
	return nil
}

func (s *configSystem) Version(context.Context) (string, error) { return "1.0", nil }

func (s *configSystem) Command(*kit.Cluster, *kit.Replica) (kit.Command, error) {
	return kit.Command{}, errors.New("configSystem starts no server")
}

func (s *configSystem) Write(context.Context, *kit.Replica, string, string) error {
	return errors.New("configSystem writes nothing")
}

func (s *configSystem) ReadAll(context.Context, *kit.Replica) (map[string]string, error) {
	return nil, errors.New("configSystem reads nothing")
}

func (s *configSystem) CaughtUp(context.Context, *kit.Cluster, []*kit.Replica) (bool, string, error) {
	return false, "", errors.New("configSystem has no cluster")
}

// quorumConfigSystem has the Quorum capability, so that Start gets past the engine's checks.
type quorumConfigSystem struct{ configSystem }

func (quorumConfigSystem) Leader(context.Context, *kit.Cluster, []*kit.Replica) (*kit.Replica, string, error) {
	return nil, "", errors.New("quorumConfigSystem has no leader")
}

// exitingSystem's first server is a real process that exits at once, after printing a line
// that Prepare wrote for the whole cluster; the others wait, so which one exits is certain.
type exitingSystem struct{ quorumConfigSystem }

func (exitingSystem) Prepare(_ context.Context, c *kit.Cluster) error {
	var log strings.Builder // 26 lines: an error quotes the last 20
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&log, "log line %d\n", i)
	}
	return os.WriteFile(filepath.Join(c.Spec.Dir, "motd"), []byte(log.String()+"no quorum today\n"), 0o644)
}

func (exitingSystem) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if r.Index != 0 {
		return kit.Command{Path: "/bin/sleep", Args: []string{"60"}}, nil
	}
	return kit.Command{Path: "/bin/sh", Args: []string{"-c", "cat " + filepath.Join(c.Spec.Dir, "motd") + " >&2; exit 3"}}, nil
}

func (exitingSystem) CaughtUp(context.Context, *kit.Cluster, []*kit.Replica) (bool, string, error) {
	return false, "nobody answers", nil
}

// bareSystem is configSystem without the Configurable capability.
type bareSystem struct{ s configSystem }

func (b bareSystem) Version(ctx context.Context) (string, error) { return b.s.Version(ctx) }
func (b bareSystem) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	return b.s.Command(c, r)
}
func (b bareSystem) Write(ctx context.Context, r *kit.Replica, k, v string) error {
	return b.s.Write(ctx, r, k, v)
}
func (b bareSystem) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	return b.s.ReadAll(ctx, r)
}
func (b bareSystem) CaughtUp(ctx context.Context, c *kit.Cluster, rs []*kit.Replica) (bool, string, error) {
	return b.s.CaughtUp(ctx, c, rs)
}

var etcdAbout = kit.About{Name: "etcd", DRMs: []string{"qce"}, PortsPerReplica: 2}

// startSpec is a spec that every check passes, on ports that are free.
func startSpec(t *testing.T) cem.ClusterSpec {
	t.Helper()
	return cem.ClusterSpec{DRM: "qce", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.FreePorts(t, 6)}
}

func TestStartChecks(t *testing.T) {
	tests := []struct {
		name    string
		about   kit.About
		sys     kit.System
		spec    func(*cem.ClusterSpec)
		wantErr string // how the error starts
		wantEnd string // how it ends
	}{
		{"unknown key", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte("server = \"x\"\nbogus = 1\nzzz = 2\n") },
			`etcd config: unknown key "bogus", "zzz"`, ""},
		{"bad value", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte("copies = 0") },
			"etcd config: copies must be at least 1", ""},
		{"not TOML", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte("copies = ") },
			"etcd config: toml: line 1", ""},
		{"wrong type", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`copies = "two"`) },
			"etcd config: toml: line 1 (last key \"copies\"): incompatible types", ""},
		{"bad break", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`break_realisation = "yes"`) },
			`etcd config: break_realisation must be "leave-behind", "skip-relink", "lose-write", "skip-wait", "fail-nothing" or unset, got "yes"`, ""},
		{"bad disk unit", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`disk_unit = "block"`) },
			`etcd config: disk unit must be "page", "sector" or "byte", got "block"`, ""},
		{"bad disk keeps", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`disk_keeps = "all"`) },
			`etcd config: disk keeps must be "none", "prefix" or "subset", got "all"`, ""},
		{"bad disk names", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`disk_names = "posix"`) },
			`etcd config: disk names must be "journal" or "strict", got "posix"`, ""},
		{"torn_writes", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`torn_writes = false`) },
			`etcd config: torn_writes is gone: disk_keeps = "none" drops every unsynced byte`, ""},
		{"no keys at all", etcdAbout, bareSystem{}, func(s *cem.ClusterSpec) { s.Config = []byte(`server = "x"`) },
			`etcd config: unknown key "server"`, ""},
		{"DRM of another plugin", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.DRM = "ssr" },
			"etcd: start: DRM ssr is realised by the redis plugin, not by etcd", ""},
		{"unknown DRM", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.DRM = "raft" },
			`etcd: start: unknown DRM "raft"`, ""},
		{"too few replicas", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Replicas = 1 },
			"etcd: start: replicas must be between 2 and 16, got 1", ""},
		{"no directory", etcdAbout, &quorumConfigSystem{}, func(s *cem.ClusterSpec) { s.Dir = "" },
			"etcd: start: the cluster spec has no directory", ""},
		{"no Quorum", etcdAbout, &configSystem{}, nil,
			"etcd: start: DRM qce needs the system to implement kit.Quorum", ""},
		{"no Linker", kit.About{Name: "redis", DRMs: []string{"sclr"}, PortsPerReplica: 1}, &configSystem{}, func(s *cem.ClusterSpec) { s.DRM = "sclr" },
			"redis: start: DRM sclr needs the system to implement kit.Linker", ""},
		{"no command", etcdAbout, &quorumConfigSystem{}, nil,
			"etcd: start: etcd-0: configSystem starts no server", ""},
		{"server exits", etcdAbout, &exitingSystem{}, nil,
			"etcd: start: waiting for etcd-0, etcd-1, etcd-2 caught up: etcd-0 (pid ",
			"  log line 24\n  log line 25\n  no quorum today"},
		{"bad About", kit.About{Name: "etcd", DRMs: []string{"qce"}}, &quorumConfigSystem{}, nil,
			`plugin "etcd": About needs a name, DRMs (or declared ones) and at least one port per replica`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := kit.New(tt.about, tt.sys)
			spec := startSpec(t)
			if tt.spec != nil {
				tt.spec(&spec)
			}
			err := p.Start(context.Background(), spec)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Start error = %v, want it to start with %q", err, tt.wantErr)
			}
			if !strings.HasSuffix(err.Error(), tt.wantEnd) {
				t.Errorf("Start error %q should end with %q", err, tt.wantEnd)
			}
			// One line says what failed; a server that exited has its log's last 20 lines quoted.
			quotes := strings.Contains(tt.wantEnd, "no quorum today")
			if first, _, _ := strings.Cut(err.Error(), "\n"); quotes && !strings.HasSuffix(first, "etcd-0.log:") || !quotes && first != err.Error() {
				t.Errorf("Start error %q: its first line is not the whole message, or more lines follow", err)
			}
			if quotes && (strings.Contains(err.Error(), "log line 6\n") || !strings.Contains(err.Error(), "log:\n  log line 7\n")) {
				t.Errorf("Start error %q does not quote the log's last 20 lines", err)
			}
			for range 2 {
				if err := p.Teardown(context.Background()); err != nil {
					t.Errorf("Teardown after a failed Start: %v", err)
				}
			}
		})
	}
}

func TestStartBusyPort(t *testing.T) {
	// The busy port is replica 2's second, in the cluster's reserved block: a port of the
	// kernel's ephemeral range, with the five below it, could be any process's (another port of
	// the cluster then busy made the error name that one, now and then under load).
	spec := startSpec(t)
	port := spec.BasePort + 5
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = kit.New(etcdAbout, &quorumConfigSystem{}).Start(context.Background(), spec)
	want := "etcd: start: port 127.0.0.1:" + strconv.Itoa(port) + " is already in use (by " + proc.PortHolders(port) + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Start error = %v, want %q", err, want)
	}
}

func TestNoCluster(t *testing.T) {
	p := kit.New(etcdAbout, &quorumConfigSystem{})
	ctx := context.Background()
	if _, err := p.Apply(ctx, cem.Step{Transition: "D[0,0,1]"}); err == nil || err.Error() != "etcd: step 1: no cluster; Start one first" {
		t.Errorf("Apply error = %v", err)
	}
	if _, err := p.Read(ctx); err == nil || err.Error() != "etcd: read: no cluster; Start one first" {
		t.Errorf("Read error = %v", err)
	}
	if err := p.Teardown(ctx); err != nil {
		t.Errorf("Teardown error = %v", err)
	}
}

func TestInfo(t *testing.T) {
	info, err := kit.New(etcdAbout, &quorumConfigSystem{}).Info(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "etcd" || info.ServerVersion != "1.0" || info.Version == "" ||
		len(info.Capabilities.DRMs) != 1 || info.Capabilities.PortsPerReplica != 2 {
		t.Errorf("Info = %+v", info)
	}
}

// TestInfoReleases: Info lists the releases of the system's server in modulo's cache, oldest
// first by their numbers, with the table's line that runs one, the home directory written "~";
// a file that is not a release's is left out, and a cache without releases lists none.
func TestInfoReleases(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	about := etcdAbout
	about.Releases = kit.Releases{Path: "etcd/<version>/etcd", Key: "server"}
	for _, tt := range []struct {
		name    string
		files   []string
		want    []string
		setting string
	}{
		{"built", []string{"etcd/3.5.21/etcd", "etcd/3.10.0/etcd", "etcd/3.5.9/etcd", "etcd/3.6.0-rc.1/etcd", "etcd/notes/readme"},
			[]string{"3.5.9", "3.5.21", "3.6.0-rc.1", "3.10.0"}, `server = "~/cache/etcd/<version>/etcd"`},
		{"none built", []string{"redis/4.0.0/redis-server"}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := filepath.Join(home, "cache")
			t.Cleanup(func() { os.RemoveAll(cache) })
			t.Setenv("MODULO_CACHE", cache)
			for _, f := range tt.files {
				if err := os.MkdirAll(filepath.Join(cache, filepath.Dir(f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(cache, f), nil, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			info, err := kit.New(about, &quorumConfigSystem{}).Info(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(info.Releases, tt.want) || info.ReleaseSetting != tt.setting {
				t.Errorf("releases %q, setting %q; want %q, %q", info.Releases, info.ReleaseSetting, tt.want, tt.setting)
			}
		})
	}
}

func TestOutput(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		args    []string
		want    string
		wantErr string
	}{
		{"prints", "/bin/sh", []string{"-c", "echo server 1.2.3"}, "server 1.2.3\n", ""},
		{"missing binary", "no-such-server-binary", nil, "", `server binary "no-such-server-binary" not found`},
		{"fails", "/bin/sh", []string{"-c", "echo usage: >&2; echo unknown flag >&2; exit 2"}, "", "/bin/sh -c echo usage: >&2; echo unknown flag >&2; exit 2: exit status 2; its output:\n  usage:\n  unknown flag"},
		{"fails silently", "/bin/sh", []string{"-c", "exit 1"}, "", "/bin/sh -c exit 1: exit status 1 (no output)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := kit.Output(context.Background(), tt.path, tt.args...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || out != tt.want {
				t.Fatalf("Output = %q, %v; want %q", out, err, tt.want)
			}
		})
	}
}

func TestExpandHome(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	for _, tt := range []struct{ path, want string }{
		{"~/.cache/modulo/nats-server/2.12.2/nats-server", "/home/someone/.cache/modulo/nats-server/2.12.2/nats-server"},
		{"~", "/home/someone"},
		{"~other/bin/server", "~other/bin/server"}, // another user's home is the shell's business
		{"/usr/sbin/nats-server", "/usr/sbin/nats-server"},
		{"nats-server", "nats-server"},
		{"bin/~/server", "bin/~/server"},
	} {
		got, err := kit.ExpandHome(tt.path)
		if err != nil || got != tt.want {
			t.Errorf("ExpandHome(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}
