// uncommitted-applied.go reproduces by hand, without modulo, the failure that
// uncommitted-applied.txt keeps: three nats-server processes and a few lines of nats.go.
//
//	go run plugins/nats/testdata/uncommitted-applied.go [nats-server]
//
// Server i listens on BASE_PORT+10i (client), +1 (route) and +2 (monitoring); BASE_PORT
// defaults to 24200.
// 1. Start three servers (JetStream, routes between them) and create stream R3 with 3 replicas.
// 2. SIGSTOP the stream leader's two followers; publish w1 to the leader (no answer comes);
// once w1 is in the leader's Raft log, SIGKILL all three.
// 3. Start the two followers again; publish w2, which they acknowledge as sequence 1.
// 4. Start the old leader again and wait until the stream's leader counts every server current;
// print the stream's state in each server's store.
// 5. Read sequence 1 through each server in turn as the stream's leader (a leader stepdown
// until it leads): the old leader serves w1, which was never acknowledged, the others w2.
//
// It prints what each server serves and ends with DIVERGED (exit status 1), or CONVERGED for a
// fixed server (0); 2 when the reproduction itself failed. Every server is killed on exit; its
// directory and log stay, in a directory of $TMPDIR it names.
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
func await(what string, cond func() bool) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	check(fmt.Errorf("%s: not within a minute", what))
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

func main() {
	if len(os.Args) > 1 {
		binary = os.Args[1]
	}
	if p := os.Getenv("BASE_PORT"); p != "" {
		var err error
		base, err = strconv.Atoi(p)
		check(err)
	}
	os.Exit(run())
}

// run reproduces the failure and returns the exit status: 1 diverged, 0 converged.
func run() int {
	dir, err := os.MkdirTemp("", "nats-uncommitted-")
	check(err)
	fmt.Println("servers' directories and logs:", dir)
	var all []*server
	for i := range 3 {
		s := &server{name: "n" + strconv.Itoa(i), dir: filepath.Join(dir, "n"+strconv.Itoa(i)), i: i}
		check(os.MkdirAll(s.dir, 0o755))
		all = append(all, s)
	}
	defer func() {
		for _, s := range all {
			if s.cmd != nil && s.cmd.ProcessState == nil {
				s.signal(syscall.SIGKILL)
			}
		}
	}()
	for _, s := range all {
		s.start(all)
	}

	// 1. The stream, once the meta group has a leader.
	await("stream R3 created", func() bool {
		nc, err := nats.Connect(all[0].url(), nats.NoReconnect())
		if err != nil {
			return false // not serving yet
		}
		defer nc.Close()
		js, _ := nc.JetStream()
		_, err = js.AddStream(&nats.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Storage: nats.FileStorage, Replicas: 3})
		return err == nil
	})
	leader := leaderAmong(all)
	var followers []*server
	for _, s := range all {
		if s != leader {
			followers = append(followers, s)
		}
	}
	fmt.Println("1. stream R3 created; its leader is", leader.name)

	// 2. w1 reaches the leader alone.
	for _, f := range followers {
		f.signal(syscall.SIGSTOP)
	}
	nc, js := connect(leader)
	_, err = js.PublishAsync("r3.w1", []byte("w1"), nats.MsgId("w1"))
	check(err)
	await("w1 in "+leader.name+"'s Raft log", func() bool {
		logs, _ := filepath.Glob(filepath.Join(leader.dir, "store", "jetstream", "$SYS", "_js_", "S-*", "msgs", "*.blk"))
		for _, f := range logs {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte("w1")) {
				return true
			}
		}
		return false
	})
	nc.Close()
	for _, s := range all {
		s.signal(syscall.SIGKILL)
	}
	fmt.Println("2. followers paused; w1 published to", leader.name, "and in its log, unacknowledged; all three killed")

	// 3. The followers alone acknowledge w2.
	for _, f := range followers {
		f.start(all)
	}
	leaderAmong(followers)
	nc, js = connect(followers[0])
	ack, err := js.Publish("r3.w2", []byte("w2"), nats.MsgId("w2"))
	check(err)
	nc.Close()
	if ack.Sequence != 1 {
		check(fmt.Errorf("w2 was acknowledged as sequence %d: w1 reached a follower, and the write meant for the leader alone committed", ack.Sequence))
	}
	fmt.Printf("3. %s and %s restarted; w2 acknowledged as sequence %d\n", followers[0].name, followers[1].name, ack.Sequence)

	// 4. The old leader rejoins.
	leader.start(all)
	await("one stream leader that counts every server current", func() bool {
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
	time.Sleep(2 * time.Second) // what a current server still has to apply
	fmt.Println("4.", leader.name, "restarted; the stream's leader counts every server current")
	for _, s := range all {
		_, state, _ := s.jsz()
		fmt.Printf("   %s's store: %s\n", s.name, state)
	}

	// 5. Sequence 1 as each server serves it when it leads.
	served := map[string]string{}
	for _, s := range all {
		await(s.name+" leads", func() bool {
			if l := leaderAmong(all); l == s {
				return true
			}
			nc, _ := connect(all[0])
			defer nc.Close()
			nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.R3", nil, 5*time.Second)
			time.Sleep(time.Second)
			return false
		})
		nc, js := connect(s)
		m, err := js.GetMsg("R3", 1)
		check(err)
		nc.Close()
		served[s.name] = string(m.Data)
		fmt.Printf("5. %s leads and serves sequence 1 = %s\n", s.name, m.Data)
	}
	if served[leader.name] != served[followers[0].name] {
		fmt.Printf("DIVERGED: %s serves %s as sequence 1, %s and %s serve %s\n", leader.name, served[leader.name],
			followers[0].name, followers[1].name, served[followers[0].name])
		return 1
	}
	fmt.Println("CONVERGED: every server serves", served[leader.name], "as sequence 1")
	return 0
}
