package main

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// monitor records, with MONITOR, the commands a server executes that reach it from another
// server of the cluster: what replication delivers to it.
type monitor struct {
	conn  net.Conn
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func startMonitor(t *testing.T, port int) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	m := &monitor{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
	}()
	return m
}

// stop ends the recording and returns its lines.
func (m *monitor) stop() []string {
	m.conn.Close()
	<-m.done
	return m.lines
}

// monitorLine is `+1700000000.123456 [0 127.0.0.1:20001] "SET" "k1.1" "v"`: the database, the
// client's address and the command.
var monitorLine = regexp.MustCompile(`^\+\d+\.\d+ \[(\d+) 127\.0\.0\.1:(\d+)\] (.*)$`)

// scheduleKey is a key the schedule writes: k<step>.<write>, with sets_per_write a ".<set>".
var scheduleKey = regexp.MustCompile(`^"k\d+\.\d+(\.\d+)?"$`)

// TestStreamHoldsOnlyTheSchedule records what every replica receives by replication while an
// S/L/R schedule runs (link failures, relinks, writes in two databases, the probe), on every
// supported version: the schedule's SETs and replication bookkeeping (SELECT, PING), nothing
// the plugin added to the stream.
func TestStreamHoldsOnlyTheSchedule(t *testing.T) {
	plugintest.Servers(t) // real servers, old builds among them
	// Link failures and relinks in both directions, writes in databases 1 and 0, the probe.
	s := parseSchedule(t, "D[1,0,0] C[0,1]<1,-,1> D[0,1,0] C[0,1]<-,0,-> C[2]<-,0,1>")
	servers := map[string]string{"7.0 (Debian)": debianServer}
	for _, v := range []string{"2.8.0", "4.0.0", "4.0.2"} {
		servers[v] = oldServer(t, v)
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			spec := testSpec(t, "slr", 2, 3, "databases = 2\nserver = "+strconv.Quote(server))
			ports := map[string]bool{}
			for i := range 3 {
				ports[strconv.Itoa(spec.BasePort+i)] = true
			}
			p := startCluster(t, spec)
			var monitors []*monitor
			for i := range 3 {
				monitors = append(monitors, startMonitor(t, spec.BasePort+i))
			}
			for i, st := range s.steps {
				if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: st.String()}); err != nil {
					t.Fatalf("step %d %s: %v", i+1, st, err)
				}
			}
			snap, err := p.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := groupDifferences(snap); d != "" {
				t.Errorf("replicas differ: %s", d)
			}
			time.Sleep(50 * time.Millisecond) // the last MONITOR lines in flight
			sets := 0
			for i, m := range monitors {
				for _, line := range m.stop() {
					f := monitorLine.FindStringSubmatch(line)
					if f == nil {
						if line != "+OK" {
							t.Errorf("replica %d: unexpected MONITOR line %q", i, line)
						}
						continue
					}
					if !ports[f[2]] {
						continue // a client of the plugin's (INFO, SLAVEOF, reads), not the stream
					}
					cmd := strings.Fields(f[3])
					switch strings.ToUpper(strings.Trim(cmd[0], `"`)) {
					case "SET":
						if len(cmd) < 2 || !scheduleKey.MatchString(cmd[1]) {
							t.Errorf("replica %d received a SET of no key of the schedule: %s", i, line)
						}
						sets++
					case "SELECT", "PING":
					default:
						t.Errorf("replica %d received %s by replication: %s", i, cmd[0], line)
					}
				}
			}
			if sets == 0 {
				t.Error("no SET arrived by replication: the recording did not work")
			}
			t.Logf("%d SETs arrived by replication, and nothing else but SELECT and PING", sets)
		})
	}
}
