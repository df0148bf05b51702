package kit

import "testing"

// TestDrawFollowsAbstractReplica: what a failure draws (how much a power loss keeps, which
// bytes a corruption flips) belongs to the abstract replica the schedule names, so that a
// replay whose election maps it to another server draws the same; and it changes with the
// steps taken, the replica and what is drawn.
func TestDrawFollowsAbstractReplica(t *testing.T) {
	replicas := []*Replica{{Index: 0, Name: "x-0"}, {Index: 1, Name: "x-1"}, {Index: 2, Name: "x-2"}}
	p := &Plugin{c: &Cluster{Replicas: replicas}, conc: []int{0, 1, 2}, steps: []string{"D[0,0,1]"}}
	before := p.drawFor(replicas[2], "data")
	// A replay whose leader is x-0: placeLeader maps abstract replica 2 to it.
	p.conc = []int{2, 1, 0}
	if got := p.drawFor(replicas[0], "data"); got != before {
		t.Errorf("abstract replica 2 drew %d on x-0 and %d on x-2", got, before)
	}
	for _, tt := range []struct {
		name string
		draw uint64
	}{
		{"another replica", p.drawFor(replicas[1], "data")},
		{"another directory", p.drawFor(replicas[0], "log")},
		{"another step", (&Plugin{c: p.c, conc: p.conc, steps: []string{"D[0,1,1]"}}).drawFor(replicas[0], "data")},
	} {
		if tt.draw == before {
			t.Errorf("%s drew the same %d", tt.name, before)
		}
	}
}
