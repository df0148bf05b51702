package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
)

// Lines that Galera 26.4 and MariaDB 10.11 logged in this plugin's clusters: a node that was
// bootstrapped, one that recovered after a crash, and joiners of each kind of state transfer.
const (
	recoverOutput = "2026-11-27 19:13:59 0 [Note] Server socket created on IP: '127.0.0.1', port: '20000'.\n" +
		"2026-11-27 19:13:59 0 [Note] WSREP: Recovered position: 9f5d5a02-ea96-11f1-8f10-17d8a059331b:5\n"
	grastateText = "# GALERA saved state\nversion: 2.1\nuuid:    9f5d5a02-ea96-11f1-8f10-17d8a059331b\nseqno:   -1\nsafe_to_bootstrap: 0\n"
	sstLine      = "WSREP_SST: [INFO] rsync SST completed on joiner (20261127 19:13:40.485)"
	istLine      = "WSREP_SST: [INFO] rsync IST completed on joiner (20261127 19:16:32.898)"
)

func TestRecoveredPosition(t *testing.T) {
	uuid, seqno, err := recoveredPosition(recoverOutput)
	if err != nil || uuid != "9f5d5a02-ea96-11f1-8f10-17d8a059331b" || seqno != 5 {
		t.Errorf("recoveredPosition = %q, %d, %v", uuid, seqno, err)
	}
	if _, _, err := recoveredPosition("[ERROR] Aborting\n"); err == nil {
		t.Error("recoveredPosition found a position in output without one")
	}
}

func TestGrastate(t *testing.T) {
	g := parseGrastate(grastateText)
	if g.uuid != "9f5d5a02-ea96-11f1-8f10-17d8a059331b" || g.seqno != -1 || g.safe {
		t.Errorf("parseGrastate = %+v", g)
	}
	r := &kit.Replica{Name: "galera-0", Dir: t.TempDir()}
	if _, ok, err := readGrastate(r); ok || err != nil {
		t.Fatalf("readGrastate without a file: ok %v, %v", ok, err)
	}
	if err := os.MkdirAll(dataDir(r), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(grastatePath(r), []byte(grastateText), 0o660); err != nil {
		t.Fatal(err)
	}
	if err := markSafe(r); err != nil {
		t.Fatal(err)
	}
	g, ok, err := readGrastate(r)
	if !ok || err != nil || !g.safe || g.seqno != -1 || g.uuid == "" {
		t.Errorf("after markSafe: %+v, ok %v, %v", g, ok, err)
	}
	b, _ := os.ReadFile(grastatePath(r))
	if strings.Count(string(b), "safe_to_bootstrap") != 1 || !strings.HasPrefix(string(b), "# GALERA saved state\n") {
		t.Errorf("markSafe wrote %q", b)
	}
}

// TestSyncLines: each state transfer's line matches its kind alone, and Galera's word that a
// joiner must be restarted (from the hand reproduction's n2) matches the one kind marked stuck.
func TestSyncLines(t *testing.T) {
	kinds := (&system{}).SyncLines()
	match := func(line string) (found []string) {
		for _, k := range kinds {
			if strings.Contains(line, k.Text) {
				found = append(found, k.Kind)
				if k.Stuck {
					found = append(found, "stuck")
				}
			}
		}
		return found
	}
	const restart = "2026-11-27 22:13:16 2 [ERROR] WSREP: Receiving IST failed, node restart required: IST receiver reported failure: " +
		"'got exception while reading IST stream: Writeset checksum failed"
	for _, tt := range []struct {
		line string
		want []string
	}{
		{sstLine, []string{"SST"}},
		{istLine, []string{"IST"}},
		{restart, []string{"RESTART-REQUIRED", "stuck"}},
	} {
		if got := match(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("%q matches %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestConfig: Galera's required settings, and every peer's group address.
func TestConfig(t *testing.T) {
	s := &system{}
	if err := s.Configure(func(any) error { return nil }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var rs []*kit.Replica
	for i := range 3 {
		rs = append(rs, &kit.Replica{Index: i, Name: "galera-" + string(rune('0'+i)), Dir: filepath.Join(dir, "galera-"+string(rune('0'+i))),
			Host: "10.1.2." + string(rune('2'+i)), Ports: about.Ports})
	}
	c := &kit.Cluster{Replicas: rs}
	cnf := s.config(c, rs[1])
	for _, want := range []string{
		"wsrep_on = ON", "wsrep_provider = /usr/lib/galera/libgalera_smm.so", "binlog_format = ROW",
		"default_storage_engine = InnoDB", "innodb_autoinc_lock_mode = 2", "wsrep_sst_method = rsync",
		"innodb_flush_log_at_trx_commit = 1",
		"wsrep_cluster_address = gcomm://10.1.2.2:4567,10.1.2.3:4567,10.1.2.4:4567",
		"wsrep_node_address = 10.1.2.3:4567", "bind-address = 10.1.2.3", "port = 3306",
		`wsrep_provider_options = "gmcast.listen_addr=tcp://10.1.2.3:4567;ist.recv_addr=10.1.2.3:4568"`,
		"wsrep_sst_receive_address = 10.1.2.3:4444",
	} {
		if !strings.Contains(cnf, want+"\n") {
			t.Errorf("the configuration lacks %q:\n%s", want, cnf)
		}
	}
	bad := &system{}
	err := bad.Configure(func(v any) error { v.(*Config).FlushLogAtTrxCommit = 3; return nil })
	if err == nil {
		t.Error("innodb_flush_log_at_trx_commit = 3 was accepted")
	}
}

func TestLenenc(t *testing.T) {
	for _, tt := range []struct {
		in   []byte
		v    uint64
		n    int
		null bool
	}{
		{[]byte{0x05}, 5, 1, false},
		{[]byte{0xfb}, 0, 1, true},
		{[]byte{0xfc, 0x34, 0x12}, 0x1234, 3, false},
		{[]byte{0xfd, 0x01, 0x02, 0x03}, 0x030201, 4, false},
	} {
		v, n, null := lenenc(tt.in)
		if v != tt.v || n != tt.n || null != tt.null {
			t.Errorf("lenenc(% x) = %d, %d, %v", tt.in, v, n, null)
		}
	}
	if got := quote(`a'b\c`); got != `'a\'b\\c'` {
		t.Errorf("quote = %s", got)
	}
}

// TestPickBootstrap: the most advanced node bootstraps; among equals a running one (Galera's
// automatic bootstrap) before a stopped one, the lowest index first.
func TestPickBootstrap(t *testing.T) {
	at := func(seqnos ...int64) []grastate {
		var gs []grastate
		for _, n := range seqnos {
			gs = append(gs, grastate{seqno: n})
		}
		return gs
	}
	for _, tt := range []struct {
		name    string
		states  []grastate
		running []bool
		want    int
	}{
		{"the most advanced", at(3, 5, 4), []bool{false, false, false}, 1},
		{"the lowest index among stopped equals", at(5, 5, 5), []bool{false, false, false}, 0},
		{"a running node among equals (59a989cbb6eb6d27)", at(3, 3, 3), []bool{false, true, true}, 1},
		{"a stopped node strictly ahead", at(6, 5, 5), []bool{false, true, true}, 0},
		{"an unrecovered node last", at(-2, 3, 3), []bool{false, false, true}, 2},
	} {
		if got := pickBootstrap(tt.states, tt.running); got != tt.want {
			t.Errorf("%s: node %d, want %d", tt.name, got, tt.want)
		}
	}
}
