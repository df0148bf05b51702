// members.go holds what the etcd reproductions of this directory share: three etcd members on
// 127.0.0.1, written and read through etcd's v3 JSON gateway with net/http, their logs, and
// waits; each reproduction applies the fault its page names to the members' files itself. Each
// is built with it:
//
//	go run plugins/etcd/testdata/wal-tail.go plugins/etcd/testdata/members.go ETCD
//	go run plugins/etcd/testdata/snapshot-names.go plugins/etcd/testdata/members.go ETCD
//
// wal-tail.go is docs/bugs/etcd-wal-tail-repaired.md, snapshot-names.go
// docs/bugs/etcd-snapshot-db-name-lost.md; each says what it does and how it ends.
//
// Member mi listens on 127.0.0.1 at BASE_PORT+2i (client) and BASE_PORT+2i+1 (peer);
// BASE_PORT defaults to 32379. Every member is killed on every exit (its parent-death signal
// too); its data directory and log stay, in a directory of $TMPDIR that the reproduction names.
// Exit status 1 is the failure shown, 0 its absence, 2 a reproduction that failed itself.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	base   = 32379 // BASE_PORT
	server = "etcd"
	client = &http.Client{Timeout: 5 * time.Second}
	// flags are what every member is started with beyond its names and URLs.
	flags []string
)

// lasting is how long the members must keep saying what they say.
const lasting = 5 * time.Second

// reproduce runs the reproduction name (run, which returns its exit status) on the etcd binary
// its first argument names, in the course its second argument names among modes ("" without
// one), and exits with that status, every member stopped.
func reproduce(name string, modes []string, run func(mode string) int) {
	mode := ""
	if len(os.Args) == 3 {
		mode = os.Args[2]
	}
	if len(os.Args) < 2 || len(os.Args) > 3 || mode != "" && !slices.Contains(modes, mode) {
		usage := "usage: " + name + " ETCD_SERVER"
		if len(modes) > 0 {
			usage += " [" + strings.Join(modes, "|") + "]"
		}
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	setUp(name, os.Args[1])
	code := func() int {
		defer stopAll() // a panic in run too
		return run(mode)
	}()
	os.Exit(code)
}

type member struct {
	name, dir string
	i         int
	cmd       *exec.Cmd
	done      chan struct{} // closed once the process has ended
	err       error         // how it ended, once done
	logFrom   int64         // the length of its log when it last started
}

func (m *member) port(k int) int { return base + 2*m.i + k }
func (m *member) url(k int) string {
	return "http://127.0.0.1:" + strconv.Itoa(m.port(k))
}
func (m *member) log() string  { return filepath.Join(m.dir, m.name+".log") }
func (m *member) data() string { return filepath.Join(m.dir, "data") }

var (
	mu      sync.Mutex // guards starts against stopAll
	members []*member
	stopped bool
)

func (m *member) start() {
	var peers []string
	for _, o := range members {
		peers = append(peers, o.name+"="+o.url(1))
	}
	log, err := os.OpenFile(m.log(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	check(err)
	defer log.Close()
	fi, err := log.Stat()
	check(err)
	m.logFrom = fi.Size()
	cmd := exec.Command(server, "--name", m.name, "--data-dir", m.data(),
		"--listen-client-urls", m.url(0), "--advertise-client-urls", m.url(0),
		"--listen-peer-urls", m.url(1), "--initial-advertise-peer-urls", m.url(1),
		"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr")
	cmd.Args = append(cmd.Args, flags...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	mu.Lock()
	if stopped {
		mu.Unlock()
		return
	}
	err = cmd.Start()
	if err == nil {
		done := make(chan struct{})
		m.cmd, m.done = cmd, done
		go func() {
			m.err = cmd.Wait()
			close(done)
		}()
	}
	mu.Unlock()
	check(err)
}

func (m *member) running() bool {
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs m and waits for its end.
func (m *member) kill() {
	if m.running() {
		syscall.Kill(m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	}
}

// stopAll kills every member that runs; no member starts after it.
func stopAll() {
	mu.Lock()
	stopped = true
	mu.Unlock()
	for _, m := range members {
		m.kill()
	}
}

// check ends the reproduction with status 2 on err, every member killed.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "repro:", err)
		stopAll()
		os.Exit(2)
	}
}

// post posts req as JSON to member m's gateway and decodes the answer into resp.
func post(m *member, path string, req, resp any) error {
	body, _ := json.Marshal(req)
	hresp, err := client.Post(m.url(0)+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(hresp.Body, 300))
		return fmt.Errorf("%s: %s: %s", path, hresp.Status, bytes.TrimSpace(msg))
	}
	return json.NewDecoder(hresp.Body).Decode(resp)
}

// status is what /v3/maintenance/status says of a member (64-bit numbers are strings).
type status struct {
	Header struct {
		MemberID string `json:"member_id"`
		RaftTerm string `json:"raft_term"`
	} `json:"header"`
	Leader, RaftIndex, RaftAppliedIndex, RaftTerm string
}

// agreed tells whether every member of up follows one leader among them, each at the same raft
// index and applied all of it; it returns the leader and the common status.
func agreed(up []*member) (*member, status, bool) {
	var first status
	var leader *member
	for i, m := range up {
		var st status
		if post(m, "/v3/maintenance/status", struct{}{}, &st) != nil || st.Leader == "" || st.Leader == "0" {
			return nil, first, false
		}
		if i == 0 {
			first = st
		} else if st.Leader != first.Leader || st.RaftIndex != first.RaftIndex || st.RaftTerm != first.RaftTerm {
			return nil, first, false
		}
		if st.RaftAppliedIndex != st.RaftIndex {
			return nil, first, false
		}
		if st.Header.MemberID == st.Leader {
			leader = m
		}
	}
	return leader, first, leader != nil
}

// await polls cond until it holds or a minute has passed (a 2-core machine under load starts
// etcd in seconds); a member of watch that ends meanwhile ends the wait too. It reports which.
func await(what string, watch []*member, cond func() bool) (ok bool, ended *member) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		for _, m := range watch {
			if !m.running() {
				return false, m
			}
		}
		if cond() {
			return true, nil
		}
	}
	fmt.Printf("   (%s: not within a minute)\n", what)
	return false, nil
}

// mustAwait is await, the reproduction failing unless cond held.
func mustAwait(what string, watch []*member, cond func() bool) {
	ok, ended := await(what, watch, cond)
	switch {
	case ended != nil:
		check(fmt.Errorf("%s: %s ended (%v): %s", what, ended.name, ended.err, lastLine(ended)))
	case !ok:
		check(fmt.Errorf("%s: not within a minute", what))
	}
}

// leaderOf waits until every member of up follows one leader among them, at one raft index.
func leaderOf(up []*member) (*member, status) {
	var l *member
	var st status
	mustAwait("one leader among "+names(up)+", at one raft index", up, func() bool {
		var ok bool
		l, st, ok = agreed(up)
		return ok
	})
	return l, st
}

func put(m *member, k, v string) (term string, err error) {
	var resp struct {
		Header struct {
			RaftTerm string `json:"raft_term"`
		} `json:"header"`
	}
	err = post(m, "/v3/kv/put", map[string][]byte{"key": []byte(k), "value": []byte(v)}, &resp)
	return resp.Header.RaftTerm, err
}

// get reads k from m alone: a serializable range.
func get(m *member, k string) (string, bool, error) {
	var resp struct{ Kvs []struct{ Value []byte } }
	if err := post(m, "/v3/kv/range", map[string]any{"key": []byte(k), "serializable": true}, &resp); err != nil {
		return "", false, err
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}

// logLines are the messages of m's log since it last started whose message or error contains
// one of words: etcd logs JSON lines (zap).
func logLines(m *member, words ...string) []string {
	var out []string
	for _, line := range rawLines(m) {
		var l struct{ Level, Msg, Error, Caller string }
		if json.Unmarshal([]byte(line), &l) != nil {
			l.Msg = line // a panic's lines are not JSON
		}
		for _, w := range words {
			if strings.Contains(l.Msg, w) {
				s := l.Msg
				if l.Error != "" {
					s += " (" + l.Error + ")"
				}
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// rawLines are the lines of m's log since it last started.
func rawLines(m *member) []string {
	f, err := os.Open(m.log())
	if err != nil {
		return nil
	}
	defer f.Close()
	f.Seek(m.logFrom, io.SeekStart)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// lastLine is the last line of m's log that says why it ended.
func lastLine(m *member) string {
	l := logLines(m, "panic", "fatal", "failed", "conflict")
	if len(l) == 0 {
		return "its log says nothing of it"
	}
	return l[len(l)-1]
}

func names(ms []*member) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.name)
	}
	return list(s)
}

// list joins names as a sentence does: "m1", "m1 and m2", "m0, m1 and m2".
func list(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// verb is one for a single name, many for several.
func verb(names []string, one, many string) string {
	if len(names) == 1 {
		return one
	}
	return many
}

func setUp(name, etcd string) {
	server = etcd
	if p := os.Getenv("BASE_PORT"); p != "" {
		var err error
		base, err = strconv.Atoi(p)
		check(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		fmt.Fprintln(os.Stderr, "repro:", s)
		stopAll()
		os.Exit(2)
	}()
	dir, err := os.MkdirTemp("", "etcd-"+name+"-")
	check(err)
	fmt.Println("members' directories and logs:", dir)
	for i := range 3 {
		m := &member{name: "m" + strconv.Itoa(i), i: i}
		m.dir = filepath.Join(dir, m.name)
		check(os.MkdirAll(m.dir, 0o755))
		members = append(members, m)
	}
}
