// Package drms is the catalogue of divergence resync models (DRMs): each pairs an abstract
// execution model with the plugin that realises it on a real system.
package drms

import (
	"fmt"
	"sort"
	"strings"

	"github.com/modulo-testing/modulo/aem"
)

// DRM names one divergence resync model.
type DRM struct {
	Name    string    // short name used on the command line, such as "qcz"
	Title   string    // the paper's name, such as "Q/C/Z"
	Model   aem.Model // the abstract execution model
	Plugin  string    // the plugin that realises it
	System  string    // the system under test
	Summary string    // one line for --help
	// Defaults are the parameters the paper ran (its Table 3); Ops and Replicas list every
	// value it ran.
	Defaults aem.Params
	Ops      []int
	Replicas []int
	// Changed says when and why the model's schedules (and so their IDs) last changed, for
	// messages about files generated before; empty if they never did.
	Changed string
}

var catalogue = []DRM{
	{
		Name: "qcz", Title: "Q/C/Z", Model: aem.QCZ, Plugin: "zookeeper", System: "ZooKeeper",
		Summary:  "quorum, crash failures (SIGKILL), automatic resync",
		Defaults: aem.Params{Ops: 5, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
	},
	{
		Name: "qcm", Title: "Q/C/M", Model: aem.QCM, Plugin: "mongodb", System: "MongoDB",
		Summary:  "the Q/C/Z model on MongoDB replica sets",
		Defaults: aem.Params{Ops: 5, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
	},
	{
		// Not in the paper: the Q/C/Z model on a third system, realised by the example plugin
		// that docs/writing-a-plugin.md builds; its parameters are Q/C/Z's.
		Name: "qce", Title: "Q/C/E", Model: aem.NewQuorum("Q/C/E"), Plugin: "etcd", System: "etcd",
		Summary:  "the Q/C/Z model on etcd clusters",
		Defaults: aem.Params{Ops: 5, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
	},
	{
		Name: "ssr", Title: "S/S/R", Model: aem.SSR, Plugin: "redis", System: "Redis",
		Summary:  "no quorum, suspend failures (SIGSTOP), resync over REPLICAOF links",
		Defaults: aem.Params{Ops: 2, Replicas: 4}, Ops: []int{1, 2}, Replicas: []int{4},
	},
	{
		Name: "slr", Title: "S/L/R", Model: aem.SLR, Plugin: "redis", System: "Redis",
		Summary:  "no quorum, link failures on a replication chain",
		Defaults: aem.Params{Ops: 1, Replicas: 3}, Ops: []int{1}, Replicas: []int{3},
	},
	{
		Name: "sclr", Title: "S/CL/R", Model: aem.SCLR, Plugin: "redis", System: "Redis",
		Summary:  "no quorum, crash and link failures, online and offline (snapshot) resync",
		Defaults: aem.Params{Ops: 2, Replicas: 2}, Ops: []int{1, 2}, Replicas: []int{2},
		Changed: "S/CL/R schedules and their IDs changed on 2026-11-23, when the model was corrected to the reference generator's",
	},
}

// All returns every DRM in catalogue order.
func All() []DRM { return append([]DRM(nil), catalogue...) }

// Names returns the short names, sorted.
func Names() []string {
	var ns []string
	for _, d := range catalogue {
		ns = append(ns, d.Name)
	}
	sort.Strings(ns)
	return ns
}

// Lookup finds a DRM by short name ("qcz") or by title ("Q/C/Z"), ignoring case.
func Lookup(name string) (DRM, error) {
	for _, d := range catalogue {
		if strings.EqualFold(name, d.Name) || strings.EqualFold(name, d.Title) {
			return d, nil
		}
	}
	return DRM{}, fmt.Errorf("unknown DRM %q (known: %s)", name, strings.Join(Names(), ", "))
}
