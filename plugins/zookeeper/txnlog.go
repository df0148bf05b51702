package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ZooKeeper's on-disk transaction log (FileTxnLog), as this plugin reads it to confirm that a
// write reached a replica's disk. All integers are big-endian (jute's binary archive).
//
//	file header:  magic "ZKLG" (int), version (int), dbid (long)
//	each record:  Adler-32 of the txn bytes (long), length (int), txn bytes, 0x42 'B'
//	then padding: zeros, up to the preallocated size
//
// A record's txn bytes are a TxnHeader (clientId long, cxid int, zxid long, time long, type
// int) followed by the transaction's body and, since 3.6, a digest. The bodies this plugin
// looks into start with the path (int length + UTF-8) and the data (int length + bytes):
// CreateTxn, CreateTTLTxn and SetDataTxn.

// txnLogMagic is "ZKLG" read as a big-endian int.
const txnLogMagic = 0x5a4b4c47

// endOfRecord ends every record.
const endOfRecord = 0x42

// maxTxnSize bounds a record's length; ZooKeeper's own limit (jute.maxbuffer) is 1 MiB by
// default, so anything far above it is garbage, not a record being written.
const maxTxnSize = 64 << 20

// Transaction types (ZooDefs.OpCode) that carry a path and data.
const (
	opCreate          = 1
	opSetData         = 5
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// txnRecord is one transaction of a log.
type txnRecord struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     int32
	// Path and Data are set for creates and setData.
	Path string
	Data []byte
}

// readTxnLog reads the complete records of one log file. A record that is still being written
// (short, or with a checksum that does not match yet) ends the log: the server appends
// records in order, so everything before it is complete.
func readTxnLog(path string) ([]txnRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil // the header is not written yet
		}
		return nil, fmt.Errorf("txn log %s: %w", path, err)
	}
	if magic := binary.BigEndian.Uint32(hdr[:4]); magic != txnLogMagic {
		return nil, fmt.Errorf("txn log %s: bad magic %#x", path, magic)
	}
	var recs []txnRecord
	for {
		var head [12]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return recs, nil // end of file, or a record whose head is not written yet
		}
		sum := binary.BigEndian.Uint64(head[:8])
		n := int32(binary.BigEndian.Uint32(head[8:]))
		if n == 0 && sum == 0 {
			return recs, nil // the zero padding after the last record
		}
		if n < 0 || n > maxTxnSize {
			return nil, fmt.Errorf("txn log %s: record %d has length %d", path, len(recs)+1, n)
		}
		body := make([]byte, int(n)+1)
		if _, err := io.ReadFull(r, body); err != nil {
			return recs, nil // still being written
		}
		if body[n] != endOfRecord || uint64(adler32.Checksum(body[:n])) != sum {
			return recs, nil // still being written: the server flushes whole records, in order
		}
		rec, err := parseTxn(body[:n])
		if err != nil {
			return nil, fmt.Errorf("txn log %s: record %d: %w", path, len(recs)+1, err)
		}
		recs = append(recs, rec)
	}
}

// parseTxn decodes a record's header and, for the transactions that have them, its path and
// data.
func parseTxn(b []byte) (txnRecord, error) {
	d := decoder{b: b}
	rec := txnRecord{
		ClientID: d.long(),
		Cxid:     d.int(),
		Zxid:     d.long(),
		Time:     d.long(),
		Type:     d.int(),
	}
	switch rec.Type {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL, opSetData:
		rec.Path = string(d.buffer())
		rec.Data = d.buffer()
	}
	if d.err != nil {
		return rec, fmt.Errorf("txn type %d: %w", rec.Type, d.err)
	}
	return rec, nil
}

// decoder reads jute's big-endian encoding; the first short read sets err and every later
// read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("truncated: %d bytes wanted, %d left", n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) int() int32 {
	if p := d.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (d *decoder) long() int64 {
	if p := d.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

// buffer reads a length-prefixed byte string; length -1 is jute's null.
func (d *decoder) buffer() []byte {
	n := d.int()
	if n == -1 {
		return nil
	}
	return d.take(int(n))
}

// txnLogDir is where a replica keeps its logs and snapshots (dataDir/version-2).
func txnLogDir(dataDir string) string { return filepath.Join(dataDir, "version-2") }

// readTxnLogs reads every log file of a data directory, oldest first.
func readTxnLogs(dataDir string) ([]txnRecord, error) {
	files, err := filepath.Glob(filepath.Join(txnLogDir(dataDir), "log.*"))
	if err != nil {
		return nil, err
	}
	// Names end in the hex zxid of the file's first record; sort by that number.
	type named struct {
		path string
		zxid int64
	}
	var logs []named
	for _, f := range files {
		z, err := strconv.ParseInt(strings.TrimPrefix(filepath.Ext(f), "."), 16, 64)
		if err != nil {
			continue // not a log (ZooKeeper names nothing else log.*)
		}
		logs = append(logs, named{f, z})
	}
	slices.SortFunc(logs, func(a, b named) int { return cmp.Compare(a.zxid, b.zxid) })
	var all []txnRecord
	for _, l := range logs {
		recs, err := readTxnLog(l.path)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

// findWrite tells whether a replica's logs hold a transaction that created path with data or
// set its data to data.
func findWrite(dataDir, path string, data []byte) (bool, error) {
	recs, err := readTxnLogs(dataDir)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		if r.Path == path && string(r.Data) == string(data) {
			return true, nil
		}
	}
	return false, nil
}

// lastZxidOnDisk reads the highest zxid a replica's data directory holds: last in its logs or
// as the name of a snapshot, what it restarts from; and lastTxn, the same without the
// snapshots named after an epoch's start (counter 0), which a leader re-elected with nothing
// committed takes and which name no transaction of their own.
func lastZxidOnDisk(dataDir string) (last, lastTxn int64, err error) {
	recs, err := readTxnLogs(dataDir)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range recs {
		lastTxn = max(lastTxn, r.Zxid)
	}
	snaps, err := snapshots(dataDir)
	if err != nil {
		return 0, 0, err
	}
	last = lastTxn
	for _, s := range snaps {
		last = max(last, s.zxid)
		if zxidCounter(s.zxid) != 0 {
			lastTxn = max(lastTxn, s.zxid)
		}
	}
	return last, lastTxn, nil
}

// snapshotFile is a snapshot in a data directory and the zxid that names it.
type snapshotFile struct {
	path string
	zxid int64
}

// snapshots lists a data directory's snapshots; a file whose name is no zxid is none.
func snapshots(dataDir string) ([]snapshotFile, error) {
	paths, err := filepath.Glob(filepath.Join(txnLogDir(dataDir), "snapshot.*"))
	if err != nil {
		return nil, err
	}
	var snaps []snapshotFile
	for _, p := range paths {
		if z, err := strconv.ParseInt(strings.TrimPrefix(filepath.Ext(p), "."), 16, 64); err == nil {
			snaps = append(snaps, snapshotFile{p, z})
		}
	}
	return snaps, nil
}

// newestSnapshot is the zxid that names the snapshot a replica wrote last (by modification time,
// the highest zxid among equals), -1 for none. A leader writes one of its tree as it takes up
// its epoch: with nothing committed since, that is its state, whatever its log holds above it
// (3.8.0 logs a DIFF's proposals before it applies them, and a sync cut short leaves them
// logged and never applied).
func newestSnapshot(dataDir string) (int64, error) {
	snaps, err := snapshots(dataDir)
	if err != nil {
		return -1, err
	}
	zxid, newest := int64(-1), time.Time{}
	for _, s := range snaps {
		fi, err := os.Stat(s.path)
		if err != nil {
			return -1, fmt.Errorf("snapshot %s: %w", s.path, err)
		}
		if t := fi.ModTime(); t.After(newest) || t.Equal(newest) && s.zxid > zxid {
			zxid, newest = s.zxid, t
		}
	}
	return zxid, nil
}
