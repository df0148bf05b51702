package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// testdata/three-messages.blk is a stream's first block as nats-server 2.9.10 wrote it in a
// campaign: writes k1.1, k1.2 and k3.1 of schedule 8a0b56351de494b0 at sequences 1 to 3.
func TestParseBlock(t *testing.T) {
	blk, err := os.ReadFile(filepath.Join("testdata", "three-messages.blk"))
	if err != nil {
		t.Fatal(err)
	}
	erased := slices.Clone(blk)
	seq := binary.LittleEndian.Uint64(erased[4:])
	binary.LittleEndian.PutUint64(erased[4:], seq|erasedBit) // the first record erased
	tests := []struct {
		name string
		b    []byte
		want []string // "seq id payload" of each record
	}{
		{"whole", blk, []string{"1 k1.1 8a0b56351de494b0:k1.1", "2 k1.2 8a0b56351de494b0:k1.2", "3 k3.1 8a0b56351de494b0:k3.1"}},
		{"last record cut short", blk[:len(blk)-1], []string{"1 k1.1 8a0b56351de494b0:k1.1", "2 k1.2 8a0b56351de494b0:k1.2"}},
		{"header only", blk[:recordHeaderLen], nil},
		{"empty", nil, nil},
		{"erased", erased, []string{"1 k1.1 8a0b56351de494b0:k1.1 erased", "2 k1.2 8a0b56351de494b0:k1.2", "3 k3.1 8a0b56351de494b0:k3.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range parseBlock(tt.b) {
				s := fmtRecord(r)
				if r.Subject != subjects+msgID(r.Header) {
					t.Errorf("record %d: subject %q, message ID %q", r.Seq, r.Subject, msgID(r.Header))
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func fmtRecord(r record) string {
	s := strconv.FormatUint(r.Seq, 10) + " " + msgID(r.Header) + " " + string(r.Payload)
	if r.Erased {
		s += " erased"
	}
	return s
}

func TestMsgID(t *testing.T) {
	tests := []struct{ header, want string }{
		{"NATS/1.0\r\nNats-Expected-Stream: modulo\r\nNats-Msg-Id: k1.1\r\n\r\n", "k1.1"},
		{"NATS/1.0\r\nnats-msg-id:  k2.3 \r\n\r\n", "k2.3"},
		{"NATS/1.0\r\n\r\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := msgID([]byte(tt.header)); got != tt.want {
			t.Errorf("msgID(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
}
