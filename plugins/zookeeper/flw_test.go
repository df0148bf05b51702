package main

import (
	"os"
	"testing"
)

func TestParseSrvr(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, reply string
		want        srvrStatus
		wantErr     bool
	}{
		// Replies of Debian's ZooKeeper 3.8.0, just after a new leader took over: the leader
		// reports its epoch's first zxid, the follower the last transaction it synced.
		{name: "leader", reply: read("srvr-leader.txt"), want: srvrStatus{Serving: true, Mode: "leader", Zxid: 0x200000000, Nodes: 6}},
		{name: "follower", reply: read("srvr-follower.txt"), want: srvrStatus{Serving: true, Mode: "follower", Zxid: 0x100000001, Nodes: 6}},
		{name: "not serving", reply: "This ZooKeeper instance is not currently serving requests\n", want: srvrStatus{}},
		{name: "standalone", reply: "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nZxid: 0x3\nMode: standalone\nNode count: 7\n",
			want: srvrStatus{Serving: true, Mode: "standalone", Zxid: 3, Nodes: 7}},
		{name: "no mode", reply: "Zxid: 0x3\n", wantErr: true},
		{name: "no zxid", reply: "Mode: leader\n", wantErr: true},
		{name: "bad zxid", reply: "Zxid: 0xzz\nMode: leader\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSrvr(tt.reply)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseMntr(t *testing.T) {
	b, err := os.ReadFile("testdata/mntr-leader.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := parseMntr(string(b))
	for k, want := range map[string]string{
		"zk_server_state":     "leader",
		"zk_peer_state":       "leading - broadcast",
		"zk_synced_followers": "1",
		"zk_znode_count":      "6",
	} {
		if m[k] != want {
			t.Errorf("%s = %q, want %q", k, m[k], want)
		}
	}
}

func TestZxidParts(t *testing.T) {
	for _, tt := range []struct {
		zxid, counter int64
		text          string
	}{
		{0x200000000, 0, "0x200000000"},
		{0x100000002, 2, "0x100000002"},
		{0, 0, "0x0"},
	} {
		if c, s := zxidCounter(tt.zxid), zxidString(tt.zxid); c != tt.counter || s != tt.text {
			t.Errorf("%#x: counter %d text %s", tt.zxid, c, s)
		}
	}
}
