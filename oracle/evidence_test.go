package oracle

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/cem"
)

func TestJudge(t *testing.T) {
	// Steps: D, C, D, C; the writes of steps 0 and 2, acknowledged or not.
	kinds := []string{"D", "C", "D", "C"}
	w := func(step int, k, v string, acked bool) SentWrite {
		return SentWrite{Step: step, Key: k, Value: v, Acked: acked}
	}
	// minority is a write of step 2 that a minority received, acknowledged or unanswered.
	minority := func(acked, async bool) SentWrite {
		a := SentWrite{Step: 2, Key: "m", Value: "1", Minority: true, Answer: cem.NoAnswer, Async: async}
		if acked {
			a.Acked, a.Answer, a.AnsweredMS = true, cem.Acknowledged, 34
		}
		return a
	}
	snap := func(data ...map[string]string) *cem.Snapshot {
		s := &cem.Snapshot{}
		for _, d := range data {
			s.Replicas = append(s.Replicas, cem.ReplicaData{Data: d})
		}
		return s
	}
	tests := []struct {
		name      string
		e         Evidence
		wantClass Class
		wantMarks []Mark
	}{
		{"converged", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", true)},
			Snapshot: snap(map[string]string{"a": "1"}, map[string]string{"a": "1"})}, "", nil},
		{"a minority write kept by one", Evidence{Groups: []int{0, 0, 0}, Writes: []SentWrite{w(0, "a", "1", true), w(2, "b", "2", false)},
			Snapshot: snap(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"}, map[string]string{"a": "1"})},
			Diverged, []Mark{{Replica: 0, Key: "b", What: HoldsUnacked, Written: "the last divergence"}}},
		{"an acknowledged write missing on one", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", true), w(2, "b", "2", true)},
			Snapshot: snap(map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2"})},
			Diverged, []Mark{{Replica: 1, Key: "a", What: LacksAcked, Written: "an earlier divergence"}}},
		{"judged after step 2: step 2 is the last divergence", Evidence{Step: 2, Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", true)},
			Snapshot: snap(map[string]string{"a": "1"}, map[string]string{})},
			Diverged, []Mark{{Replica: 1, Key: "a", What: LacksAcked, Written: "the last divergence"}}},
		{"an earlier value held", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", true), w(2, "a", "2", true)},
			Snapshot: snap(map[string]string{"a": "2"}, map[string]string{"a": "1"})},
			Diverged, []Mark{{Replica: 1, Key: "a", What: HoldsOlder, Written: "the last divergence"}}},
		{"a value never written", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", false)},
			Snapshot: snap(map[string]string{"a": "1"}, map[string]string{"a": "x"})},
			Diverged, []Mark{{Replica: 0, Key: "a", What: HoldsUnacked, Written: "an earlier divergence"}, {Replica: 1, Key: "a", What: HoldsUnwritten, Written: "no step"}}},
		{"state no step wrote", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "a", "1", true)},
			Snapshot: snap(map[string]string{"a": "1", "@stream": "last=1"}, map[string]string{"a": "1", "@stream": "last=2"})},
			Diverged, []Mark{{Replica: 0, Key: "@stream", What: OtherState, Written: "no step"}, {Replica: 1, Key: "@stream", What: OtherState, Written: "no step"}}},
		{"a write stored under several keys", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(2, "k3.1", "v", false)},
			Snapshot: snap(map[string]string{"k3.1.1": "x", "k3.1.2": "y"}, map[string]string{})},
			Diverged, []Mark{{Replica: 0, Key: "k3.1.1", What: HoldsUnacked, Written: "the last divergence"}, {Replica: 0, Key: "k3.1.2", What: HoldsUnacked, Written: "the last divergence"}}},
		{"an acknowledged write stored under several keys, lacked", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(0, "k1.1", "v", true)},
			Snapshot: snap(map[string]string{"k1.1.1": "x"}, map[string]string{})},
			Diverged, []Mark{{Replica: 1, Key: "k1.1.1", What: LacksAcked, Written: "an earlier divergence"}}},
		{"a replica left out is not marked", Evidence{Groups: []int{0, 0, NotCompared}, Writes: []SentWrite{w(0, "a", "1", false)},
			Snapshot: snap(map[string]string{"a": "1"}, map[string]string{}, map[string]string{})},
			Diverged, []Mark{{Replica: 0, Key: "a", What: HoldsUnacked, Written: "an earlier divergence"}}},
		{"unreadable", Evidence{Groups: []int{0, 0}, Snapshot: &cem.Snapshot{Replicas: []cem.ReplicaData{{Data: map[string]string{}}, {Err: "connection refused"}}}},
			Diverged, []Mark{{Replica: 1, What: CannotRead, Written: "no step"}}},
		{"lost on every replica alike", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{w(2, "a", "1", true)},
			Snapshot: snap(map[string]string{}, map[string]string{})},
			LostWrite, []Mark{{Replica: 0, Key: "a", What: LacksAcked, Written: "the last divergence"}, {Replica: 1, Key: "a", What: LacksAcked, Written: "the last divergence"}}},
		{"a minority write acknowledged, undeclared: the system's fail without its data", Evidence{Step: 1, Writes: []SentWrite{minority(true, false)}},
			MinorityAck, nil},
		{"a minority write acknowledged, declared asynchronous, then lost", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{minority(true, true)},
			Snapshot: snap(map[string]string{}, map[string]string{})},
			LostWrite, []Mark{{Replica: 0, Key: "m", What: LacksAcked, Written: "the last divergence"}, {Replica: 1, Key: "m", What: LacksAcked, Written: "the last divergence"}}},
		{"a minority write unanswered, lost", Evidence{Groups: []int{0, 0}, Writes: []SentWrite{minority(false, false)},
			Snapshot: snap(map[string]string{}, map[string]string{})}, "", nil},
		{"alarms decide", Evidence{Alarms: []cem.Alarm{{Replica: 1, What: "exited", Unrecoverable: true}},
			Snapshot: snap(map[string]string{}, map[string]string{"a": "1"})}, Unrecoverable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.Kinds = kinds
			got := Judge(tt.e)
			if got.Class != tt.wantClass || !slices.Equal(got.Difference, tt.wantMarks) {
				t.Errorf("Judge = %q %+v; want %q %+v", got.Class, got.Difference, tt.wantClass, tt.wantMarks)
			}
		})
	}
}
