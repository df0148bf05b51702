package oracle

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
)

// Divergence is how the replicas of a snapshot differ: the replicas that could not be read,
// and every key on which readable replicas of one group disagree.
type Divergence struct {
	Replicas int
	// Group is each replica's group: replicas of one group must agree (cem.ReplicaData.Group).
	// NotCompared marks a replica that the system does not promise to have converged at this
	// point (one that is offline, or whose source is).
	Group      []int
	Unreadable []Unreadable
	Keys       []KeyDiff // sorted by key
}

// Unreadable is a replica whose data could not be read.
type Unreadable struct {
	Replica int
	Err     string
}

// KeyDiff is one key on which the readable replicas disagree.
type KeyDiff struct {
	Key string
	// Values holds each replica's value, by replica; an unreadable replica's is absent.
	Values []Value
}

// Value is one replica's value of a key.
type Value struct {
	Text    string
	Present bool
}

// NotCompared is the group of a replica that a comparison leaves out.
const NotCompared = -1

// Compare compares every replica's data, in the groups the plugin gave them
// (cem.ReplicaData.Group): the end of a schedule, when every replica must have converged.
func Compare(snap cem.Snapshot) Divergence {
	groups := make([]int, len(snap.Replicas))
	for i, r := range snap.Replicas {
		groups[i] = r.Group
	}
	return CompareGroups(snap, groups)
}

// CompareGroups compares the replicas of each group (NotCompared: none). A compared replica
// that could not be read counts as diverged; the readable replicas of each group must hold the
// same keys with the same values.
func CompareGroups(snap cem.Snapshot, group []int) Divergence {
	d := Divergence{Replicas: len(snap.Replicas), Group: slices.Clone(group)}
	groups := map[int][]int{} // readable replicas by group
	keys := map[string]bool{}
	for i, r := range snap.Replicas {
		if group[i] == NotCompared {
			continue
		}
		if r.Err != "" {
			d.Unreadable = append(d.Unreadable, Unreadable{Replica: i, Err: r.Err})
			continue
		}
		groups[group[i]] = append(groups[group[i]], i)
		for k := range r.Data {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		values := make([]Value, len(snap.Replicas))
		for _, members := range groups {
			for _, i := range members {
				v, ok := snap.Replicas[i].Data[k]
				values[i] = Value{Text: v, Present: ok}
			}
		}
		for _, members := range groups {
			if slices.ContainsFunc(members[1:], func(i int) bool { return values[i] != values[members[0]] }) {
				d.Keys = append(d.Keys, KeyDiff{Key: k, Values: values})
				break
			}
		}
	}
	return d
}

// Converged tells whether every replica was read and the replicas of each group hold the same
// data.
func (d Divergence) Converged() bool { return len(d.Unreadable) == 0 && len(d.Keys) == 0 }

// Groups describes the groups when there is more than one, as "2 groups: {0 1} {2}", and is
// empty otherwise: a pass over several groups says less than one over the whole cluster.
func (d Divergence) Groups() string {
	var order []int
	members := map[int][]string{}
	for i, g := range d.Group {
		if g == NotCompared {
			continue
		}
		if _, ok := members[g]; !ok {
			order = append(order, g)
		}
		members[g] = append(members[g], strconv.Itoa(i))
	}
	if len(order) < 2 {
		return ""
	}
	var parts []string
	for _, g := range order {
		parts = append(parts, "{"+strings.Join(members[g], " ")+"}")
	}
	return fmt.Sprintf("%d groups: %s", len(order), strings.Join(parts, " "))
}

// DetailKeys caps the keys the one-line detail of a divergence names: the failure folder holds
// the complete one.
const DetailKeys = 3

// Line says in one line how the replicas differ, naming at most DetailKeys keys.
func (d Divergence) Line() string {
	var parts []string
	if g := d.Groups(); g != "" {
		parts = append(parts, "compared within "+g)
	}
	for _, u := range d.Unreadable {
		parts = append(parts, fmt.Sprintf("replica %d unreadable: %s", u.Replica, firstLine(u.Err)))
	}
	if n := len(d.Keys); n > 0 {
		var ks []string
		for _, k := range d.Keys[:min(n, DetailKeys)] {
			ks = append(ks, fmt.Sprintf("%s (%s)", k.Key, d.values(k, ShortValue)))
		}
		s := fmt.Sprintf("%d %s: %s", n, words.Plural(n, "key differs", "keys differ"), strings.Join(ks, ", "))
		if n > DetailKeys {
			s += fmt.Sprintf(", and %d more", n-DetailKeys)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Report says in full how the replicas differ: every unreadable replica, and every differing
// key in a line of its own with every replica's whole value.
func (d Divergence) Report() string {
	var b strings.Builder
	if g := d.Groups(); g != "" {
		fmt.Fprintf(&b, "replicas compared within %s\n", g)
	}
	for _, u := range d.Unreadable {
		fmt.Fprintf(&b, "replica %d could not be read: %s\n", u.Replica, u.Err)
	}
	if n := len(d.Keys); n > 0 {
		fmt.Fprintf(&b, "%d %s:\n", n, words.Plural(n, "key differs", "keys differ"))
		for _, k := range d.Keys {
			fmt.Fprintf(&b, "  %s: %s\n", k.Key, d.values(k, strconv.Quote))
		}
	}
	return b.String()
}

// values renders every replica's value of k with show: `r0="v1" r1=<missing>`.
func (d Divergence) values(k KeyDiff, show func(string) string) string {
	vs := make([]string, d.Replicas)
	for i := range vs {
		vs[i] = fmt.Sprintf("r%d=%s", i, d.value(k, i, show))
	}
	return strings.Join(vs, " ")
}

// value renders replica i's value of k with show (whole, or short).
func (d Divergence) value(k KeyDiff, i int, show func(string) string) string {
	if slices.ContainsFunc(d.Unreadable, func(u Unreadable) bool { return u.Replica == i }) {
		return "<unreadable>"
	}
	if d.Group[i] == NotCompared {
		return "<not compared>"
	}
	v := k.Values[i]
	if !v.Present {
		return "<missing>"
	}
	return show(v.Text)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
