// snapshot-names.go reproduces docs/bugs/etcd-snapshot-db-name-lost.md by hand, without
// modulo (runSnapshotNames says how), built with members.go:
//
//	go run plugins/etcd/testdata/snapshot-names.go plugins/etcd/testdata/members.go ETCD [own-snapshot]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	reproduce("snapshot-names", []string{"own-snapshot"}, func(mode string) int { return runSnapshotNames(mode == "own-snapshot") })
}

// runSnapshotNames reproduces by hand, without modulo, the failure of
// docs/bugs/etcd-snapshot-db-name-lost.md: a member that lost power after it installed a
// snapshot its leader sent comes back with the name db on its old database, since nothing
// fsynced its directory after the rename that replaced it. It serves without the writes the
// snapshot carried, or, when it had saved a snapshot of its own since (ownSnapshot), panics.
//
//  1. Start m0, m1 and m2 with --snapshot-count=1 and --snapshot-catchup-entries=1 (so that a
//     leader keeps one entry for a lagging member and sends it a snapshot instead), put k1, and
//     wait until every member is at one raft index.
//  2. SIGKILL m2; put k2.1 to k2.4 through the leader (m0 and m1 acknowledge each).
//  3. Hard-link m2's member/snap/db as db.before: the file a disk still names db while the
//     rename that replaces it is not durable.
//  4. Start m2 and wait until it applied the leader's snapshot ("applied snapshot", index X)
//     and renamed X.snap.db to db.
//  5. With ownSnapshot, put k3 through the leader and wait until m2 saved a snapshot of its own
//     past X.
//  6. SIGKILL m2 and undo that one rename, as a power loss may when nothing fsynced
//     member/snap after it (POSIX; fsync(2): a file's fsync does not make its name durable):
//     db goes back to X.snap.db and db.before to db. Every file keeps what etcd wrote to it.
//  7. Start m2, wait until the three follow one leader at one raft index, and read every
//     acknowledged key from m2 alone (a serializable range), 5 s later.
//
// It ends with LOST (exit status 1) when m2 serves without an acknowledged key (etcd 3.6.16 and
// 3.7.3 without ownSnapshot), DOWN (1) when m2 exits at its restart (with ownSnapshot: "failed
// to recover v3 backend from snapshot"), and RECOVERED (0) when it holds every one; 2 when the
// reproduction itself failed.
func runSnapshotNames(ownSnapshot bool) int {
	flags = []string{"--snapshot-count=1", "--snapshot-catchup-entries=1"}
	m0, m1, m2 := members[0], members[1], members[2]
	acked := []string{"k1"}

	// 1. Three members, one key, every member at one raft index.
	for _, m := range members {
		m.start()
	}
	l, _ := leaderOf(members)
	_, err := put(l, "k1", "v1")
	check(err)
	l, st := leaderOf(members)
	fmt.Printf("1. m0, m1 and m2 started; k1 written; every member at raft index %s, leader %s\n", st.RaftIndex, l.name)

	// 2. m2 down; four writes that m0 and m1 acknowledge, and snapshot past.
	m2.kill()
	l, _ = leaderOf([]*member{m0, m1})
	for i := 1; i <= 4; i++ {
		k := "k2." + strconv.Itoa(i)
		_, err := put(l, k, "v"+k[1:])
		check(err)
		acked = append(acked, k)
	}
	_, st = leaderOf([]*member{m0, m1})
	fmt.Printf("2. m2 killed; k2.1 to k2.4 acknowledged through %s (raft index %s)\n", l.name, st.RaftIndex)

	// 3. The file that db names before m2 installs the snapshot.
	snap := filepath.Join(m2.data(), "member", "snap")
	db, before := filepath.Join(snap, "db"), filepath.Join(m2.dir, "db.before")
	check(os.Link(db, before))
	fmt.Println("3. m2's member/snap/db hard-linked as", before)

	// 4. m2 installs the leader's snapshot.
	m2.start()
	mustAwait("m2 applies its leader's snapshot", []*member{m2}, func() bool {
		return logField(m2, "applied snapshot", "incoming-leader-snapshot-index") > 0
	})
	x := logField(m2, "applied snapshot", "incoming-leader-snapshot-index")
	if sameFile(db, before) {
		check(fmt.Errorf("m2 applied a snapshot (index %d) without replacing member/snap/db", x))
	}
	fmt.Printf("4. m2 applied its leader's snapshot at index %d: member/snap/db is a new file, %016x.snap.db renamed\n", x, x)

	// 5. With ownSnapshot, a write, and m2's own snapshot after it.
	if ownSnapshot {
		_, err = put(l, "k3", "v3")
		check(err)
		acked = append(acked, "k3")
		mustAwait("m2 saves a snapshot of its own past index "+strconv.Itoa(x), []*member{m2}, func() bool {
			return logField(m2, "saved snapshot to disk", "snapshot-index") > x
		})
	}
	if y := logField(m2, "saved snapshot to disk", "snapshot-index"); y > x {
		fmt.Printf("5. m2 saved its own snapshot at index %d\n", y)
	} else {
		fmt.Printf("5. m2 saved no snapshot of its own past index %d\n", x)
	}

	// 6. m2 loses power: the rename of X.snap.db to db undone, nothing else.
	m2.kill()
	received := filepath.Join(snap, fmt.Sprintf("%016x.snap.db", x))
	check(os.Rename(db, received))
	check(os.Rename(before, db))
	fmt.Printf("6. m2 killed; member/snap/db renamed back to %016x.snap.db and db.before to db\n", x)

	// 7. m2 again, and what it serves.
	m2.start()
	ok, ended := await("one leader among m0, m1 and m2, at one raft index", members, func() bool {
		var ok bool
		l, st, ok = agreed(members)
		return ok
	})
	if ok {
		fmt.Printf("7. m2 restarted; every member follows %s (raft index %s)\n", l.name, st.RaftIndex)
	}
	for _, line := range recoveryLines(m2) {
		fmt.Printf("   m2's log: %s\n", line)
	}
	switch {
	case ended == m2:
		fmt.Printf("DOWN: m2 exited at its restart (%v): %s\n", m2.err, lastLine(m2))
		return 1
	case ended != nil:
		check(fmt.Errorf("%s ended (%v): %s", ended.name, ended.err, lastLine(ended)))
	case !ok:
		check(fmt.Errorf("the members did not agree on a leader and a raft index within a minute"))
	}
	time.Sleep(lasting)
	var lost []string
	for _, k := range acked {
		_, found, err := get(m2, k)
		check(err)
		if !found {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 {
		fmt.Printf("LOST: m2 serves without the acknowledged %s\n", list(lost))
		return 1
	}
	fmt.Printf("RECOVERED: m2 holds %s\n", list(acked))
	return 0
}

// logField is the largest number that field has in m's log lines, since it last started, whose
// message is msg; 0 when there are none.
func logField(m *member, msg, field string) int {
	var largest int
	for _, line := range rawLines(m) {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil || l["msg"] != msg {
			continue
		}
		if n, ok := l[field].(float64); ok {
			largest = max(largest, int(n))
		}
	}
	return largest
}

// recoveryLines are m's log lines, since it last started, that say which snapshot it recovers
// from and what it found missing: each message with its indexes and file, and a panic's line.
func recoveryLines(m *member) []string {
	var out []string
	for _, line := range rawLines(m) {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil {
			if strings.HasPrefix(line, "panic: ") {
				out = append(out, line)
			}
			continue
		}
		msg, _ := l["msg"].(string)
		if !slices.Contains([]string{"constructed a snapshot from WAL record", "Recovering from snapshot backend", "Skipping snapshot backend", "failed to find [SNAPSHOT-INDEX].snap.db"}, msg) {
			continue
		}
		s := msg
		for _, f := range []string{"snapshot-index", "consistent-index", "snapshot-file-path"} {
			if v, ok := l[f]; ok {
				s += fmt.Sprintf(" %s=%v", f, v)
			}
		}
		out = append(out, s)
	}
	return out
}

// sameFile tells whether paths a and b name one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	check(err)
	fb, err := os.Stat(b)
	check(err)
	return os.SameFile(fa, fb)
}
