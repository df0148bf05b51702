// uncommitted-applied.go reproduces by hand, without modulo, the failure that
// uncommitted-applied.txt keeps: three nats-server processes and a few lines of nats.go.
//
//	go run plugins/nats/testdata/uncommitted-applied.go plugins/nats/testdata/cluster.go [nats-server]
//
// (cluster.go says where the servers listen.)
//
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
// fixed server (0); 2 when the reproduction itself failed.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	setUp()
	os.Exit(run())
}

// run reproduces the failure and returns the exit status: 1 diverged, 0 converged.
func run() int {
	all, stop := startCluster("uncommitted", 3)
	defer stop()

	// 1. The stream, once the meta group has a leader.
	leader, followers := createStream(all, "R3")
	fmt.Println("1. stream R3 created; its leader is", leader.name)

	// 2. w1 reaches the leader alone.
	for _, f := range followers {
		f.signal(syscall.SIGSTOP)
	}
	nc, js := connect(leader)
	_, err := js.PublishAsync("r3.w1", []byte("w1"), nats.MsgId("w1"))
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
	awaitAllCurrent(all)
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
