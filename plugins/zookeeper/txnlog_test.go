package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testdata/log.100000001 is the start of a real transaction log of Debian's ZooKeeper 3.8.0,
// cut 64 bytes into its zero padding: the leader of a three-replica ensemble created /modulo,
// then /modulo/k1.1 while the other two replicas were suspended (a minority write), as an
// earlier version of the plugin laid its keys out.
const fixtureLog = "testdata/log.100000001"

var fixtureRecords = []struct {
	zxid       int64
	path, data string
}{
	{0x100000001, "/modulo", "e244af80baa7ba59"},
	{0x100000002, "/modulo/k1.1", "e244af80baa7ba59:1.1"},
}

func TestReadTxnLog(t *testing.T) {
	recs, err := readTxnLog(fixtureLog)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(fixtureRecords) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(fixtureRecords), recs)
	}
	for i, want := range fixtureRecords {
		r := recs[i]
		if r.Zxid != want.zxid || r.Path != want.path || string(r.Data) != want.data || r.Type != opCreate || r.Cxid != 1 {
			t.Errorf("record %d = %+v, want zxid %#x create %s = %q", i, r, want.zxid, want.path, want.data)
		}
	}
}

// TestReadTxnLogWhileWritten cuts the fixture everywhere inside its records, as a reader racing
// the server would see it: only complete records come back, and never an error.
func TestReadTxnLogWhileWritten(t *testing.T) {
	full, err := os.ReadFile(fixtureLog)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ends []int // where each record ends
	for off := 16; len(ends) < len(fixtureRecords); {
		off += 12 + len(txnBytes(t, full, off)) + 1
		ends = append(ends, off)
	}
	for cut := 0; cut <= ends[len(ends)-1]; cut++ {
		p := filepath.Join(dir, "log.1")
		if err := os.WriteFile(p, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readTxnLog(p)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := 0
		for _, e := range ends {
			if cut >= e {
				want++
			}
		}
		if len(got) != want {
			t.Fatalf("cut at %d: %d records, want %d", cut, len(got), want)
		}
	}
}

// txnBytes returns the txn bytes of the record at off.
func txnBytes(t *testing.T, b []byte, off int) []byte {
	t.Helper()
	n := int(b[off+8])<<24 | int(b[off+9])<<16 | int(b[off+10])<<8 | int(b[off+11])
	return b[off+12 : off+12+n]
}

func TestReadTxnLogDamaged(t *testing.T) {
	full, err := os.ReadFile(fixtureLog)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	badMagic := append([]byte("ZKSN"), full[4:]...)
	if _, err := readTxnLog(write("magic", badMagic)); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("bad magic: error %v", err)
	}

	// A flipped byte in the second record's body fails its checksum: the reader stops before
	// it, as it does for a record still being written.
	second := 16 + 12 + len(txnBytes(t, full, 16)) + 1
	flipped := append([]byte(nil), full...)
	flipped[second+12+40] ^= 0xff
	recs, err := readTxnLog(write("flipped", flipped))
	if err != nil || len(recs) != 1 {
		t.Errorf("checksum mismatch: %d records, %v; want the first only", len(recs), err)
	}

	huge := append([]byte(nil), full...)
	huge[16+8] = 0x7f // length of the first record: about 2 GiB
	if _, err := readTxnLog(write("huge", huge)); err == nil {
		t.Error("absurd record length: no error")
	}
}

func TestFindWriteAndLastZxid(t *testing.T) {
	data := t.TempDir()
	logDir := txnLogDir(data)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(fixtureLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "log.100000001"), full, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, data string
		found      bool
	}{
		{"/modulo/k1.1", "e244af80baa7ba59:1.1", true},
		{"/modulo/k1.1", "another schedule:1.1", false},
		{"/modulo/k1.2", "e244af80baa7ba59:1.1", false},
	} {
		ok, err := findWrite(data, tt.path, []byte(tt.data))
		if err != nil || ok != tt.found {
			t.Errorf("findWrite(%s, %q) = %v, %v; want %v", tt.path, tt.data, ok, err, tt.found)
		}
	}

	steps := []struct {
		snapshot      string // written before the step, if any
		last, lastTxn int64
	}{
		{"", 0x100000002, 0x100000002},
		// A replica synced from a snapshot restarts from the snapshot's zxid; one named after
		// an epoch's start holds no transaction of its own.
		{"snapshot.200000000", 0x200000000, 0x100000002},
		{"snapshot.200000003", 0x200000003, 0x200000003},
		{"snapshot.300000000", 0x300000000, 0x200000003},
	}
	for _, st := range steps {
		if st.snapshot != "" {
			if err := os.WriteFile(filepath.Join(logDir, st.snapshot), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		last, lastTxn, err := lastZxidOnDisk(data)
		if err != nil || last != st.last || lastTxn != st.lastTxn {
			t.Errorf("with %q: lastZxidOnDisk = %#x, %#x, %v; want %#x, %#x", st.snapshot, last, lastTxn, err, st.last, st.lastTxn)
		}
	}
}

// TestNewestSnapshot: the snapshot written last names the zxid, whether or not the highest; a
// name that is no zxid is not a snapshot; none, -1. 9e28d575b5e3ad7f's leader on 3.8.0 held
// snapshot.200000001, written as it took up epoch 5, below 0x300000001 in its log.
func TestNewestSnapshot(t *testing.T) {
	base := time.Date(2026, 11, 26, 3, 34, 36, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		files map[string]time.Duration // snapshot name: modified that long after base
		want  int64
	}{
		{"none", nil, -1},
		{"one", map[string]time.Duration{"snapshot.100000000": 0}, 0x100000000},
		{"written last, below a higher one", map[string]time.Duration{"snapshot.300000001": 0, "snapshot.200000001": time.Second}, 0x200000001},
		{"the same time: the higher", map[string]time.Duration{"snapshot.200000001": 0, "snapshot.300000000": 0}, 0x300000000},
		{"a name that is no zxid", map[string]time.Duration{"snapshot.100000000": 0, "snapshot.tmp": time.Second}, 0x100000000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			dir := txnLogDir(data)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, after := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, base.Add(after), base.Add(after)); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := newestSnapshot(data); err != nil || got != tt.want {
				t.Errorf("newestSnapshot = %#x, %v; want %#x", got, err, tt.want)
			}
		})
	}
}
