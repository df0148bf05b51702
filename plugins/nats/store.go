package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// record is one message record of a JetStream file store's block file (N.blk), as
// nats-server 2.9's msgBlock.writeMsgRecord lays it out, little-endian:
//
//	total_len(4) sequence(8) timestamp(8) subject_len(2) subject [header_len(4) header] payload hash(8)
//
// The top bit of total_len says that a header is there; the top bit of the sequence marks a
// record erased or a placeholder for a deleted message.
type record struct {
	Seq     uint64
	Subject string
	Header  []byte
	Payload []byte
	Erased  bool
}

const (
	recordHeaderLen = 22
	recordHashLen   = 8
	headerBit       = 1 << 31
	erasedBit       = 1 << 63
)

// parseBlock returns the whole records of a block file's contents, in order. The server
// writes a block by appending records: a record cut short at the end (a write still in the
// server's buffer, or cut by a crash) is not returned, and neither is anything after a
// record whose length makes no sense.
func parseBlock(b []byte) []record {
	var rs []record
	le := binary.LittleEndian
	for len(b) >= recordHeaderLen {
		total := le.Uint32(b[0:])
		hasHeader := total&headerBit != 0
		n := int(total &^ headerBit)
		if n < recordHeaderLen+recordHashLen || n > len(b) {
			break
		}
		seq := le.Uint64(b[4:])
		slen := int(le.Uint16(b[20:]))
		body := b[recordHeaderLen : n-recordHashLen]
		if slen > len(body) {
			break
		}
		r := record{Seq: seq &^ erasedBit, Erased: seq&erasedBit != 0, Subject: string(body[:slen])}
		body = body[slen:]
		if hasHeader {
			if len(body) < 4 || int(le.Uint32(body)) > len(body)-4 {
				break
			}
			hlen := int(le.Uint32(body))
			r.Header, body = body[4:4+hlen], body[4+hlen:]
		}
		r.Payload = body
		rs = append(rs, r)
		b = b[n:]
	}
	return rs
}

// msgID is the Nats-Msg-Id of a NATS header block ("NATS/1.0\r\nNats-Msg-Id: k1.1\r\n\r\n").
func msgID(header []byte) string {
	for _, line := range strings.Split(string(header), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Nats-Msg-Id") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// readStore returns the records of every block file in a file store's msgs directory, by
// sequence: where blocks hold the same sequence twice, the later block's record.
func readStore(dir string) (map[uint64]record, error) {
	blks, err := blockFiles(dir)
	if err != nil {
		return nil, err
	}
	msgs := map[uint64]record{}
	for _, f := range blks {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		for _, r := range parseBlock(b) {
			if !r.Erased {
				msgs[r.Seq] = r
			}
		}
	}
	return msgs, nil
}

// blockFiles lists the N.blk files of a msgs directory in the order of N, the order the store
// made them; a directory that is not there holds none.
func blockFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type blk struct {
		n    int
		path string
	}
	var blks []blk
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%d.blk", &n); err == nil && strings.HasSuffix(e.Name(), ".blk") {
			blks = append(blks, blk{n, filepath.Join(dir, e.Name())})
		}
	}
	sort.Slice(blks, func(i, j int) bool { return blks[i].n < blks[j].n })
	paths := make([]string, len(blks))
	for i, b := range blks {
		paths[i] = b.path
	}
	return paths, nil
}

// filesContain tells whether any block file of the msgs directories holds b.
func filesContain(dirs []string, b []byte) (bool, error) {
	for _, dir := range dirs {
		blks, err := blockFiles(dir)
		if err != nil {
			return false, err
		}
		for _, f := range blks {
			data, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				return false, err
			}
			if bytes.Contains(data, b) {
				return true, nil
			}
		}
	}
	return false, nil
}

// lastSeq is the highest sequence among a store's records, 0 for none: for a Raft group's
// write-ahead log, the index of the last entry on disk.
func lastSeq(msgs map[uint64]record) uint64 {
	var last uint64
	for s := range msgs {
		last = max(last, s)
	}
	return last
}
