// wal-tail.go reproduces docs/bugs/etcd-wal-tail-repaired.md by hand, without modulo (its run function
// says how), built with members.go:
//
//	go run plugins/etcd/testdata/wal-tail.go plugins/etcd/testdata/members.go ETCD
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() { reproduce("wal-tail", nil, func(string) int { return runWALTail() }) }

const (
	// key and value are the write that the cut takes from m2's WAL.
	key   = "k4.1"
	value = "v4.1"
	// cut is how many bytes before the end of its data m2's WAL loses.
	cut = 12
	// wal is the members' first (and only) WAL file.
	wal = "member/wal/0000000000000000-0000000000000000.wal"
)

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

// runWALTail reproduces by hand, without modulo, the loss of docs/bugs/etcd-wal-tail-repaired.md:
// three etcd members at their defaults, written through etcd's v3 JSON gateway, and a WAL cut
// as a disk that loses the tail of an fsynced write leaves it.
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
func runWALTail() int {
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
