// cluster.go holds what the hand reproductions of this directory share: nats-server processes
// on 127.0.0.1, their signals, what each says of the stream in its own store, and waits. Each
// reproduction is built with it:
//
//	go run plugins/nats/testdata/uncommitted-applied.go plugins/nats/testdata/cluster.go [nats-server]
//	go run plugins/nats/testdata/split-brain.go plugins/nats/testdata/cluster.go [nats-server]
//
// Server i listens on BASE_PORT+10i (client), +1 (route) and +2 (monitoring); BASE_PORT
// defaults to 24200. Every server is killed on exit (its parent-death signal too); its
// directory and log stay, in a directory of $TMPDIR the reproduction names.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

var base = 24200 // BASE_PORT

type server struct {
	name, dir string
	i         int
	cmd       *exec.Cmd
}

var binary = "nats-server"

func (s *server) port(k int) int { return base + 10*s.i + k }
func (s *server) url() string    { return "nats://127.0.0.1:" + strconv.Itoa(s.port(0)) }

func (s *server) start(all []*server) {
	var routes []string
	for _, o := range all {
		if o != s {
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(o.port(1)))
		}
	}
	log, err := os.OpenFile(filepath.Join(s.dir, s.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	check(err)
	s.cmd = exec.Command(binary, "--name", s.name, "--addr", "127.0.0.1", "--port", strconv.Itoa(s.port(0)),
		"--http_port", strconv.Itoa(s.port(2)), "--cluster_name", "repro", "--cluster", "nats://127.0.0.1:"+strconv.Itoa(s.port(1)),
		"--routes", strings.Join(routes, ","), "--jetstream", "--store_dir", filepath.Join(s.dir, "store"), "--debug")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	check(s.cmd.Start())
}

func (s *server) signal(sig syscall.Signal) {
	check(syscall.Kill(s.cmd.Process.Pid, sig))
	switch sig {
	case syscall.SIGKILL:
		s.cmd.Wait()
	case syscall.SIGSTOP:
		// A thread stops when it next enters the kernel: until every one has, a follower may
		// still log the write it must miss.
		await(s.name+" stopped", s.stopped)
	}
}

// stopped tells whether every thread of s is stopped, by the state in its /proc stat line (the
// field after the command's closing parenthesis).
func (s *server) stopped() bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", s.cmd.Process.Pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return len(tasks) > 0
}

// jsz is what the server says of the stream in its own store.
func (s *server) jsz() (leader string, state string, current map[string]bool) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz?accounts=true&streams=true", s.port(2)))
	if err != nil {
		return "", "", nil
	}
	defer resp.Body.Close()
	var j struct {
		Accounts []struct {
			Streams []struct {
				Cluster struct {
					Leader   string
					Replicas []struct {
						Name    string
						Current bool
					}
				}
				State struct {
					Messages uint64 `json:"messages"`
					FirstSeq uint64 `json:"first_seq"`
					LastSeq  uint64 `json:"last_seq"`
				}
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	json.NewDecoder(resp.Body).Decode(&j)
	for _, a := range j.Accounts {
		for _, st := range a.Streams {
			current = map[string]bool{}
			for _, r := range st.Cluster.Replicas {
				current[r.Name] = r.Current
			}
			return st.Cluster.Leader, fmt.Sprintf("first=%d last=%d messages=%d", st.State.FirstSeq, st.State.LastSeq, st.State.Messages), current
		}
	}
	return "", "", nil
}

// check ends the reproduction with status 2 on err; the servers die with it (Pdeathsig).
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "repro:", err)
		os.Exit(2)
	}
}

// await polls cond for a minute: nats-server 2.9 elects a leader 4 to 9 s after it lost one.
func await(what string, cond func() bool) { awaitWithin(what, time.Minute, cond) }

// awaitWithin waits until cond holds, for at most within.
func awaitWithin(what string, within time.Duration, cond func() bool) {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	check(fmt.Errorf("%s: not within %s", what, within))
}

func connect(s *server) (*nats.Conn, nats.JetStreamContext) {
	nc, err := nats.Connect(s.url(), nats.NoReconnect())
	check(err)
	js, err := nc.JetStream()
	check(err)
	return nc, js
}

// leaderAmong waits until every server of up follows one of them as the stream's leader.
func leaderAmong(up []*server) *server {
	var l *server
	await("a stream leader among "+fmt.Sprint(len(up))+" servers", func() bool {
		name, _, _ := up[0].jsz()
		for _, s := range up {
			if n, _, _ := s.jsz(); n != name {
				return false
			}
		}
		for _, s := range up {
			if s.name == name {
				l = s
				return true
			}
		}
		return false
	})
	return l
}

// setUp reads the command line (the nats-server binary) and $BASE_PORT.
func setUp() {
	if len(os.Args) > 1 {
		binary = os.Args[1]
	}
	if p := os.Getenv("BASE_PORT"); p != "" {
		var err error
		base, err = strconv.Atoi(p)
		check(err)
	}
}

// startCluster starts n servers, each in a directory of its own under a new directory of
// $TMPDIR named for what; stop kills those still running.
func startCluster(what string, n int) (all []*server, stop func()) {
	dir, err := os.MkdirTemp("", "nats-"+what+"-")
	check(err)
	fmt.Println("servers' directories and logs:", dir)
	for i := range n {
		s := &server{name: "n" + strconv.Itoa(i), dir: filepath.Join(dir, "n"+strconv.Itoa(i)), i: i}
		check(os.MkdirAll(s.dir, 0o755))
		all = append(all, s)
	}
	for _, s := range all {
		s.start(all)
	}
	return all, func() {
		for _, s := range all {
			if s.cmd != nil && s.cmd.ProcessState == nil {
				s.signal(syscall.SIGKILL)
			}
		}
	}
}

// createStream creates stream name with one replica per server of all, through the first,
// once the meta group has a leader, and returns its leader and the other servers once every
// server follows it.
func createStream(all []*server, name string) (leader *server, followers []*server) {
	await("stream "+name+" created", func() bool {
		nc, err := nats.Connect(all[0].url(), nats.NoReconnect())
		if err != nil {
			return false // not serving yet
		}
		defer nc.Close()
		js, _ := nc.JetStream()
		_, err = js.AddStream(&nats.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: nats.FileStorage, Replicas: len(all)})
		return err == nil
	})
	leader = leaderAmong(all)
	for _, s := range all {
		if s != leader {
			followers = append(followers, s)
		}
	}
	return leader, followers
}

// awaitAllCurrent waits until every server of all follows one stream leader and it counts
// every other server current, then for what a current server still has to apply. Since
// nats-server 2.14 a server whose log holds an entry the new leader lacks refuses its appends
// ("AppendEntry detected pindex less than/equal to ours") for 2.5 to 3 minutes before it
// installs a snapshot and rejoins, where 2.12 truncated at once: it is given 5 minutes.
func awaitAllCurrent(all []*server) {
	awaitWithin("one stream leader that counts every server current", 5*time.Minute, func() bool {
		name, _, _ := all[0].jsz()
		var current map[string]bool
		for _, s := range all {
			n, _, c := s.jsz()
			if n != name || n == "" {
				return false
			}
			if s.name == name {
				current = c
			}
		}
		for _, s := range all {
			if s.name != name && !current[s.name] {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
}
