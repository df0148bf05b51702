package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// flwTimeout bounds one four-letter-word exchange: a serving replica answers within
// milliseconds, and one that is stopped or stuck must not hold up a poll.
const flwTimeout = time.Second

// fourLetter sends a four-letter word to a replica's client port and returns the whole reply
// (the server closes the connection after it).
func fourLetter(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, flwTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	return string(b), nil
}

// srvrStatus is what a replica's srvr reply says about it.
type srvrStatus struct {
	// Serving is false while the replica is in leader election or syncing with a leader: it
	// then answers "This ZooKeeper instance is not currently serving requests".
	Serving bool
	Mode    string // leader, follower, standalone or observer
	Zxid    int64  // the last transaction applied to its data tree
	Nodes   int    // znodes in its data tree
}

// parseSrvr reads a srvr reply. go-zookeeper's FLWSrvr cannot: it insists on a version line
// of the form "3.x.y-<hash>, built on <date>", and Debian's build says "3.8.0-${mvngit.commit.id}".
func parseSrvr(reply string) (srvrStatus, error) {
	var st srvrStatus
	if strings.Contains(reply, "not currently serving requests") {
		return st, nil
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	st.Mode = fields["Mode"]
	if st.Mode == "" {
		return st, fmt.Errorf("srvr reply without a Mode line: %q", firstLineOf(reply))
	}
	zxid, ok := strings.CutPrefix(fields["Zxid"], "0x")
	if !ok {
		return st, fmt.Errorf("srvr reply without a Zxid line: %q", firstLineOf(reply))
	}
	var err error
	if st.Zxid, err = strconv.ParseInt(zxid, 16, 64); err != nil {
		return st, fmt.Errorf("srvr reply: bad zxid %q", fields["Zxid"])
	}
	if n := fields["Node count"]; n != "" {
		if st.Nodes, err = strconv.Atoi(n); err != nil {
			return st, fmt.Errorf("srvr reply: bad node count %q", n)
		}
	}
	st.Serving = true
	return st, nil
}

// srvr asks a replica for its status.
func srvr(ctx context.Context, addr string) (srvrStatus, error) {
	reply, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return srvrStatus{}, err
	}
	return parseSrvr(reply)
}

// parseMntr reads an mntr reply: one "key<TAB>value" line per metric.
func parseMntr(reply string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(reply, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// mntr asks a replica for its metrics.
func mntr(ctx context.Context, addr string) (map[string]string, error) {
	reply, err := fourLetter(ctx, addr, "mntr")
	if err != nil {
		return nil, err
	}
	return parseMntr(reply), nil
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// zxidString renders a zxid as ZooKeeper logs it.
func zxidString(z int64) string { return "0x" + strconv.FormatInt(z, 16) }

// zxidCounter is a zxid's position within the epoch of the leader that proposed it (the
// epoch is the high 32 bits).
func zxidCounter(z int64) int64 { return z & 0xffffffff }
