package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FirstDifference returns the first observation in which two runs of a schedule differ, as
// "step 4: replica 2 sync=TRUNC in the recorded run, sync=SNAP in replay 3", or "" when they
// agree. Steps are compared in order, replicas by index, fields by name; a replica or a field
// that one run observed and the other did not is a difference too.
func FirstDifference(a, b []StepObservations, aName, bName string) string {
	byStep := func(obs []StepObservations) map[int]map[int]map[string]string {
		m := map[int]map[int]map[string]string{}
		for _, so := range obs {
			m[so.Step] = map[int]map[string]string{}
			for _, o := range so.Replicas {
				m[so.Step][o.Replica] = o.Fields
			}
		}
		return m
	}
	am, bm := byStep(a), byStep(b)
	for _, step := range unionKeys(am, bm) {
		ar, br := am[step], bm[step]
		for _, r := range unionKeys(ar, br) {
			if d := fieldsDiffer(ar[r], br[r]); d != nil {
				return fmt.Sprintf("step %d: replica %d %s in %s, %s in %s", step, r, render(ar[r], d), aName, render(br[r], d), bName)
			}
		}
	}
	return ""
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[V any](a, b map[int]V) []int {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// fieldsDiffer returns the names of the fields in which a and b differ, sorted; nil when none.
func fieldsDiffer(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// render shows the named fields of one observation: "sync=TRUNC role=follower", "-" for a
// field it lacks.
func render(fields map[string]string, keys []string) string {
	if fields == nil {
		return "not observed"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, ok := fields[k]
		if !ok {
			v = "-"
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}
