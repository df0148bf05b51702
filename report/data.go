package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// dataTable is every replica's final data side by side, a row per key, with the keys the
// replicas disagree on first and the cells that differ marked.
type dataTable struct {
	Replicas []replicaHead
	Rows     []dataRow
	// DiffKeys counts the keys the replicas disagree on; Hidden the agreeing keys not shown;
	// Shortened the values shown by their first bytes, length and digest.
	DiffKeys, Hidden, Shortened int
	Groups                      string // the groups compared within, when there are several
}

type replicaHead struct {
	Replica    int
	Unreadable string
}

type dataRow struct {
	Key     string
	Differs bool
	Cells   []dataCell
}

type dataCell struct {
	Text  string
	Class string // "", "differs", "missing differs", "unreadable"
}

// maxAgreeing bounds the agreeing keys shown: the differing ones are what the table is for.
const maxAgreeing = 40

func newDataTable(snap *cem.Snapshot) *dataTable {
	d := oracle.Compare(*snap)
	t := &dataTable{DiffKeys: len(d.Keys), Groups: d.Groups()}
	unreadable := map[int]bool{}
	for _, u := range d.Unreadable {
		unreadable[u.Replica] = true
	}
	for i, r := range snap.Replicas {
		t.Replicas = append(t.Replicas, replicaHead{Replica: i, Unreadable: r.Err})
	}
	differs := map[string]bool{}
	for _, k := range d.Keys {
		differs[k.Key] = true
		row := dataRow{Key: k.Key, Differs: true}
		odd := oddOnes(k, d.Group, unreadable)
		for i := range snap.Replicas {
			c := dataCell{}
			switch v := k.Values[i]; {
			case unreadable[i]:
				c = dataCell{Text: "(unreadable)", Class: "unreadable"}
			case !v.Present:
				c = dataCell{Text: "(missing)", Class: "missing"}
			default:
				c.Text = t.cellValue(v.Text)
			}
			if odd[i] {
				c.Class += " differs"
			}
			row.Cells = append(row.Cells, c)
		}
		t.Rows = append(t.Rows, row)
	}
	keys := map[string]bool{}
	for _, r := range snap.Replicas {
		for k := range r.Data {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if differs[k] {
			continue
		}
		if len(t.Rows)-t.DiffKeys == maxAgreeing {
			t.Hidden++
			continue
		}
		row := dataRow{Key: k}
		for i, r := range snap.Replicas {
			if unreadable[i] {
				row.Cells = append(row.Cells, dataCell{Text: "(unreadable)", Class: "unreadable"})
				continue
			}
			v, ok := r.Data[k]
			if !ok {
				v = "(missing)" // only in another group than those holding it
			}
			row.Cells = append(row.Cells, dataCell{Text: t.cellValue(v)})
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// cellValue is a value as a cell shows it: whole when short, else as oracle.ShortValue says it
// (its first bytes, length and digest); replicas.json in the failure folder has every value.
func (t *dataTable) cellValue(v string) string {
	if len(v) <= oracle.WholeValueLen {
		return v
	}
	t.Shortened++
	return oracle.ShortValue(v)
}

// oddOnes marks, within each group, the readable replicas whose value of k is not the one
// most of the group hold (the first replica's on a tie).
func oddOnes(k oracle.KeyDiff, group []int, unreadable map[int]bool) map[int]bool {
	type gv struct {
		g int
		v oracle.Value
	}
	count := map[gv]int{}
	for i, v := range k.Values {
		if !unreadable[i] {
			count[gv{group[i], v}]++
		}
	}
	best := map[int]oracle.Value{}
	bestN := map[int]int{}
	for i, v := range k.Values {
		if unreadable[i] {
			continue
		}
		if n := count[gv{group[i], v}]; n > bestN[group[i]] {
			best[group[i]], bestN[group[i]] = v, n
		}
	}
	odd := map[int]bool{}
	for i, v := range k.Values {
		if !unreadable[i] && v != best[group[i]] {
			odd[i] = true
		}
	}
	return odd
}

// String says what the table shows, for its caption.
func (t *dataTable) String() string {
	s := fmt.Sprintf("%d %s", t.DiffKeys, words.Plural(t.DiffKeys, "key differs", "keys differ"))
	if t.Groups != "" {
		s += " (compared within " + t.Groups + ")"
	}
	if t.Hidden > 0 {
		s += fmt.Sprintf("; %d more agreeing keys not shown", t.Hidden)
	}
	if t.Shortened > 0 {
		s += fmt.Sprintf("; %d long %s shown by %s first bytes, length and SHA-256 (every value whole: the failure folder's %s)",
			t.Shortened, words.Plural(t.Shortened, "value", "values"), words.Plural(t.Shortened, "its", "their"), results.ReplicasJSON)
	}
	return s
}
