// split-brain.go reproduces by hand, without modulo, the split brain that split-brain.txt keeps
// (nats-server#7567's course): five nats-server processes at their defaults (2.12.2's
// sync_interval is two minutes; 2.9.10 has none, and fails the same way, its power loss being
// the copied store below) and a few lines of nats.go.
//
//	go run plugins/nats/testdata/split-brain.go plugins/nats/testdata/cluster.go ~/.cache/modulo/nats-server/2.12.2/nats-server
//
// (cluster.go says where the servers listen.)
//
//  1. Start five servers and create stream R5 with five replicas; its leader is L.
//  2. SIGKILL two of L's followers, A and B, so that they miss w1 (modulo cuts them off by a
//     partition instead; either way they never receive it).
//  3. Copy L's store as it stands, L stopped for the copy: what L's disk holds after a power
//     loss within sync_interval of the next write, as modulo's file system shows it (only that
//     write's bytes were unsynced there).
//  4. Publish w1 through L: L and its other two followers, C and D, acknowledge it, three of
//     five.
//  5. L loses power: SIGKILL, and its store put back as the copy. SIGSTOP C and D.
//  6. Start A, B and L: three of five, none of them with w1; wait until they follow one stream
//     leader.
//  7. SIGCONT C and D, and wait until the stream's leader counts every server current.
//  8. Print the stream's state in each server's store, and again 10 s later.
//
// It ends with DIVERGED (exit status 1) when C and D, or one of them, hold w1 and the others do
// not, every server following one leader: the acknowledged w1 is served or not depending on the
// server asked, for good. As a rule both hold it; now and then one comes back with its stream
// emptied to the leader's. LOST (1) when neither does; CONVERGED (0) when every server holds
// w1; 2 when the reproduction itself failed.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// lasting is how long the stores must keep what they say: ten of nats-server's heartbeats.
const lasting = 10 * time.Second

func main() {
	setUp()
	os.Exit(run())
}

// run reproduces the failure and returns the exit status: 1 diverged, 0 converged.
func run() int {
	all, stop := startCluster("split-brain", 5)
	defer stop()

	// 1. The stream, once the meta group has a leader.
	leader, followers := createStream(all, "R5")
	a, b, c, d := followers[0], followers[1], followers[2], followers[3]
	fmt.Println("1. stream R5 created; its leader is", leader.name)

	// 2. A and B will miss w1.
	a.signal(syscall.SIGKILL)
	b.signal(syscall.SIGKILL)
	fmt.Println("2.", a.name, "and", b.name, "killed")

	// 3. What a power loss after w1 leaves of the leader's store.
	store := filepath.Join(leader.dir, "store")
	leader.signal(syscall.SIGSTOP)
	check(exec.Command("cp", "-a", store, store+".before-w1").Run())
	leader.signal(syscall.SIGCONT)
	fmt.Println("3.", leader.name+"'s store copied, as it stands before w1")

	// 4. w1, acknowledged by three of five.
	nc, js := connect(leader)
	ack, err := js.Publish("r5.w1", []byte("w1"), nats.MsgId("w1"))
	check(err)
	nc.Close()
	fmt.Printf("4. w1 acknowledged as sequence %d by %s, %s and %s\n", ack.Sequence, leader.name, c.name, d.name)

	// 5. The leader loses power; C and D pause.
	leader.signal(syscall.SIGKILL)
	check(os.RemoveAll(store))
	check(os.Rename(store+".before-w1", store))
	c.signal(syscall.SIGSTOP)
	d.signal(syscall.SIGSTOP)
	fmt.Println("5.", leader.name, "lost power (its store as before w1);", c.name, "and", d.name, "paused")

	// 6. Three of five without w1.
	first := []*server{a, b, leader}
	for _, s := range first {
		s.start(all)
	}
	l := leaderAmong(first)
	fmt.Println("6.", a.name+",", b.name, "and", leader.name, "restarted; they follow", l.name)

	// 7. The two that hold w1 go on.
	c.signal(syscall.SIGCONT)
	d.signal(syscall.SIGCONT)
	awaitAllCurrent(all)
	fmt.Println("7.", c.name, "and", d.name, "went on; the stream's leader counts every server current")

	// 8. Each server's store, and again later: a split brain that lasts.
	states := map[*server]string{}
	for _, s := range all {
		_, states[s], _ = s.jsz()
		fmt.Printf("8. %s's store: %s\n", s.name, states[s])
	}
	time.Sleep(lasting)
	changed := false
	for _, s := range all {
		if _, now, _ := s.jsz(); now != states[s] {
			fmt.Printf("8. %s's store %v later: %s\n", s.name, lasting, now)
			states[s], changed = now, true
		}
	}
	if !changed {
		fmt.Printf("8. %v later, every store says the same\n", lasting)
	}
	// The servers that hold w1 at the end: C and D, both as a rule; one of them now and then
	// comes back with its stream reset to the leader's, empty; both may. Either way w1 is
	// served or not depending on the server asked, or by none.
	var holders, others []string
	held := ""
	for _, s := range all {
		if strings.Contains(states[s], fmt.Sprintf("last=%d messages=1", ack.Sequence)) {
			if s != c && s != d {
				check(fmt.Errorf("%s, which never acknowledged w1, holds it: not the split brain's course", s.name))
			}
			holders, held = append(holders, s.name), states[s]
		} else {
			others = append(others, s.name)
		}
	}
	switch {
	case len(holders) == 0:
		fmt.Println("LOST: no server holds the acknowledged w1")
		return 1
	case len(others) > 0:
		fmt.Printf("DIVERGED: %s %s the acknowledged w1 (%s), %s %s not\n",
			list(holders), verb(holders, "holds", "hold"), held, list(others), verb(others, "does", "do"))
		return 1
	}
	fmt.Println("CONVERGED: every store says", states[all[0]])
	return 0
}

// list joins names as a sentence does: "n1", "n1 and n2", "n0, n1 and n4".
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
