// wal-tail.go reproduces by hand, without modulo, the loss of docs/bugs/etcd-wal-tail-repaired.md:
// three etcd members at their defaults, written through etcd's v3 JSON gateway, and a WAL cut
// as a disk that loses the tail of an fsynced write leaves it.
//
//	go run plugins/etcd/testdata/wal-tail.go ~/.cache/modulo/etcd/3.5.21/etcd
//
// Member mi listens on 127.0.0.1 at BASE_PORT+2i (client) and BASE_PORT+2i+1 (peer);
// BASE_PORT defaults to 32379. Every member is killed on every exit (its parent-death signal
// too); its data directory and log stay, in a directory of $TMPDIR that the reproduction names.
//
//  1. Start m0, m1 and m2, put k1 and k2, and wait until every member is at one raft index.
//  2. SIGKILL m0; put k4.1 through the leader: m1 and m2 acknowledge it.
//  3. SIGKILL m1 and m2 at once, right after the acknowledgement (before their key-value
//     stores commit k4.1, which they do every 100 ms).
//  4. Cut m2's WAL (64 MB preallocated) 12 bytes before its data ends: within the record of
//     k4.1, its last, as a disk that loses the tail of an fsynced write leaves it.
//  5. Start m0 and m2: m2 takes the cut record for a torn write and drops it ("repaired WAL");
//     wait until they elect a leader, neither holding k4.1. Then start m1.
//  6. Wait until the three follow one leader at one raft index, and read k4.1 from each
//     member alone (a serializable range), and again 5 s later.
//
// It ends with LOST (exit status 1) when no member holds the acknowledged k4.1: m1 found a
// conflict at k4.1's index and dropped it. DIVERGED (1) when some hold it and some do not (a
// member's key-value store committed k4.1 before the kill); DOWN when a member is no longer
// running at the end (1 unless two members serve k4.1); CONVERGED (0) when every member holds
// it; 2 when the reproduction itself failed.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
)

const (
	key   = "k4.1"
	value = "v4.1"
	// cut is how many bytes before the end of its data m2's WAL loses.
	cut = 12
	// lasting is how long the members must keep saying what they say.
	lasting = 5 * time.Second
	// wal is the members' first (and only) WAL file.
	wal = "member/wal/0000000000000000-0000000000000000.wal"
)

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
		var l struct{ Level, Msg, Error, Caller string }
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			l.Msg = sc.Text() // a panic's lines are not JSON
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

// lastLine is the last line of m's log that says why it ended.
func lastLine(m *member) string {
	l := logLines(m, "panic", "fatal", "failed", "conflict")
	if len(l) == 0 {
		return "its log says nothing of it"
	}
	return l[len(l)-1]
}

// cutWAL cuts the member's WAL within its last record, n bytes before its data (its last byte
// not zero: the file is preallocated with zeros) ends, and says where.
func cutWAL(m *member, n int) string {
	path := filepath.Join(m.data(), wal)
	b, err := os.ReadFile(path)
	check(err)
	// The records' frames: an 8-byte length (its top byte the padding), the record, the padding.
	var last, next int
	for next+8 <= len(b) {
		field := binary.LittleEndian.Uint64(b[next:])
		if field == 0 {
			break
		}
		size, pad := int(field&^(uint64(0xff)<<56)), 0
		if field>>63 == 1 {
			pad = int(field >> 56 & 7)
		}
		last, next = next, next+8+size+pad
	}
	end := bytes.LastIndexFunc(b[:min(next, len(b))], func(r rune) bool { return r != 0 }) + 1
	switch {
	case next > len(b) || end <= last+8:
		check(fmt.Errorf("%s: no whole last record", path))
	case !bytes.Contains(b[last:next], []byte(key)) || !bytes.Contains(b[last:next], []byte(value)):
		check(fmt.Errorf("%s: its last record, bytes %d to %d, is not %s's", path, last, next, key))
	case end-n <= last+8:
		check(fmt.Errorf("%s: %d bytes before its data ends is outside its last record (bytes %d to %d)", path, n, last, next))
	}
	check(os.Truncate(path, int64(end-n)))
	return fmt.Sprintf("%s cut from %d to %d bytes, %d bytes before its data ends, within its last record (%s's, bytes %d to %d)",
		wal, len(b), end-n, n, key, last, next)
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

func verb(names []string, one, many string) string {
	if len(names) == 1 {
		return one
	}
	return many
}

func setUp() {
	if len(os.Args) > 1 {
		server = os.Args[1]
	}
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
	dir, err := os.MkdirTemp("", "etcd-wal-tail-")
	check(err)
	fmt.Println("members' directories and logs:", dir)
	for i := range 3 {
		m := &member{name: "m" + strconv.Itoa(i), i: i}
		m.dir = filepath.Join(dir, m.name)
		check(os.MkdirAll(m.dir, 0o755))
		members = append(members, m)
	}
}

func main() {
	setUp()
	code := run()
	stopAll()
	os.Exit(code)
}

// run reproduces the loss and returns the exit status: 1 lost or diverged, 0 converged.
func run() int {
	defer stopAll()
	m0, m1, m2 := members[0], members[1], members[2]

	// 1. Three members, two keys, every member at one raft index.
	for _, m := range members {
		m.start()
	}
	l, _ := leaderOf(members)
	for _, k := range []string{"k1", "k2"} {
		_, err := put(l, k, "v"+k[1:])
		check(err)
	}
	l, st := leaderOf(members)
	fmt.Printf("1. m0, m1 and m2 started; k1 and k2 written; every member at raft index %s, term %s, leader %s\n", st.RaftIndex, st.RaftTerm, l.name)

	// 2. k4.1, acknowledged by m1 and m2 while m0 is down.
	m0.kill()
	l, st = leaderOf([]*member{m1, m2})
	term, err := put(l, key, value)
	acked := time.Now()
	check(err)

	// 3. m1 and m2 killed at once, right after.
	syscall.Kill(m1.cmd.Process.Pid, syscall.SIGKILL)
	syscall.Kill(m2.cmd.Process.Pid, syscall.SIGKILL)
	after := time.Since(acked)
	<-m1.done
	<-m2.done
	fmt.Printf("2. m0 killed; %s acknowledged through %s (term %s), the entry after raft index %s\n", key, l.name, term, st.RaftIndex)
	fmt.Printf("3. m1 and m2 killed %v after the acknowledgement\n", after.Round(time.Microsecond))

	// 4. m2's disk loses the tail of its last write.
	fmt.Println("4. m2's", cutWAL(m2, cut))

	// 5. m0 and m2, neither holding k4.1 now, elect a leader; then m1 starts.
	m0.start()
	m2.start()
	l, st = leaderOf([]*member{m0, m2})
	repaired := logLines(m2, "repaired WAL")
	if len(repaired) == 0 {
		check(fmt.Errorf("m2 did not log that it repaired its WAL"))
	}
	fmt.Printf("5. m0 and m2 restarted; m2 logged %q; they elected %s (term %s, raft index %s)\n", repaired[0], l.name, st.RaftTerm, st.RaftIndex)
	m1.start()
	fmt.Println("5. m1 started")

	// 6. One leader, then what each member serves, and again later.
	ok, ended := await("one leader among m0, m1 and m2, at one raft index", members, func() bool {
		var ok bool
		l, st, ok = agreed(members)
		return ok
	})
	switch {
	case ended != nil:
		fmt.Printf("6. %s ended (%v): %s\n", ended.name, ended.err, lastLine(ended))
	case ok:
		fmt.Printf("6. every member follows %s (term %s, raft index %s)\n", l.name, st.RaftTerm, st.RaftIndex)
	default:
		fmt.Println("6. the members did not agree on a leader and a raft index within a minute")
	}
	for _, m := range members {
		for _, line := range logLines(m, "repaired WAL", "became leader", "found conflict", "panic") {
			fmt.Printf("   %s's log: %s\n", m.name, line)
		}
	}
	read := func() map[*member]string {
		r := map[*member]string{}
		for _, m := range members {
			v, found, err := get(m, key)
			switch {
			case !m.running():
				r[m] = fmt.Sprintf("down (%v)", m.err)
			case err != nil:
				r[m] = "does not answer: " + err.Error()
			case !found:
				r[m] = "absent"
			default:
				r[m] = strconv.Quote(v)
			}
		}
		return r
	}
	seen := read()
	for _, m := range members {
		fmt.Printf("6. %s: %s = %s\n", m.name, key, seen[m])
	}
	time.Sleep(lasting)
	now := read()
	changed := false
	for _, m := range members {
		if now[m] != seen[m] {
			fmt.Printf("6. %s %v later: %s = %s\n", m.name, lasting, key, now[m])
			changed = true
		}
	}
	if !changed {
		fmt.Printf("6. %v later, every member says the same\n", lasting)
	}

	// 7. The verdict.
	var holders, others, down []string
	for _, m := range members {
		switch {
		case now[m] == strconv.Quote(value):
			holders = append(holders, m.name)
		case strings.HasPrefix(now[m], "down") || strings.HasPrefix(now[m], "does not answer"):
			down = append(down, m.name+" "+now[m])
		default:
			others = append(others, m.name)
		}
	}
	switch {
	case len(down) > 0:
		held := "none of the others holds the acknowledged " + key
		if len(holders) > 0 {
			held = list(holders) + " " + verb(holders, "holds", "hold") + " the acknowledged " + key
		}
		fmt.Printf("DOWN: %s; %s\n", list(down), held)
		if len(holders) >= 2 {
			return 0
		}
		return 1
	case len(holders) == 0:
		fmt.Println("LOST: no member holds the acknowledged", key)
		return 1
	case len(others) > 0:
		fmt.Printf("DIVERGED: %s %s the acknowledged %s, %s %s not\n",
			list(holders), verb(holders, "holds", "hold"), key, list(others), verb(others, "does", "do"))
		return 1
	}
	fmt.Println("CONVERGED: every member holds", key)
	return 0
}
