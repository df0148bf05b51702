// Package drms is the catalogue of divergence resync models (DRMs): each pairs an abstract
// execution model with the plugin that realises it on a real system. The built-in catalogue
// holds the paper's DRMs (and the tutorial's); a plugin may declare DRMs of its own, which a
// Resolver (the host's discovery of plugins) adds.
package drms

import (
	"fmt"
	"regexp"
	"slices"
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
	// PowerLoss says that the DRM's crashes are power losses: the server is SIGKILLed and its
	// file system drops what it had not made durable (package cem/powerfs) before anything
	// reads it again. Only rule sets that crash servers have it (quorum, crash-link).
	PowerLoss bool
	// Partition says that the DRM's failures are partitions (package cem/netns): on the quorum
	// rules a crash is one, the server staying up, cut off from every other replica (the plugin
	// still reaches it); on the link rules a link failure is one between a replica and its
	// source. A convergence that brings the replica back heals it. Only those two rule sets
	// have it.
	Partition bool
	// Declared says that the plugin declares the DRM: it is not the built-in catalogue's, and
	// its defaults are the plugin author's, not the paper's. PluginPath is where the plugin
	// that declares it was found.
	Declared   bool
	PluginPath string
	// base is the DRM that Compose added failure kinds to; nil for one that is not composed.
	base *DRM
}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// Declare makes a DRM that plugin declares, checking what it says: a short name of lower-case
// letters and digits that no built-in DRM has, a title, a rule set (aem.ParseRules), valid
// default parameters, ranges that hold them.
func Declare(plugin, name, title, rules, system, summary string, defaults aem.Params, ops, replicas []int) (DRM, error) {
	fail := func(format string, args ...any) (DRM, error) {
		return DRM{}, fmt.Errorf("plugin %s declares DRM %q: %s", plugin, name, fmt.Sprintf(format, args...))
	}
	if !namePattern.MatchString(name) {
		return fail("a short name is lower-case letters and digits, starting with a letter")
	}
	if b, ok := builtin(name); ok {
		return fail("the built-in DRM %s (%s, realised by the %s plugin) has that name", b.Name, b.Title, b.Plugin)
	}
	if b, ok := builtin(title); ok {
		return fail("the built-in DRM %s has its title %q", b.Name, title)
	}
	r, err := aem.ParseRules(rules)
	if err != nil {
		return fail("%v", err)
	}
	m, err := aem.New(r, title)
	if err != nil {
		return fail("%v", err)
	}
	if err := defaults.Validate(); err != nil {
		return fail("default parameters: %v", err)
	}
	if len(ops) == 0 {
		ops = []int{defaults.Ops}
	}
	if len(replicas) == 0 {
		replicas = []int{defaults.Replicas}
	}
	if !slices.Contains(ops, defaults.Ops) || !slices.Contains(replicas, defaults.Replicas) {
		return fail("the ranges ops %v and replicas %v must hold the defaults %d and %d", ops, replicas, defaults.Ops, defaults.Replicas)
	}
	return DRM{
		Name: name, Title: title, Model: m, Plugin: plugin, System: system, Summary: summary,
		Defaults: defaults, Ops: slices.Clone(ops), Replicas: slices.Clone(replicas), Declared: true,
	}, nil
}

// Spec is a DRM as a plugin declares it (Declare's arguments): everything the catalogue
// holds of one. A campaign's campaign.json keeps it, without the name the campaign gives
// already, so that the campaign is read where its plugin is not installed.
type Spec struct {
	Name    string `json:"-"`       // short name, lower-case letters and digits: "pgl"
	Title   string `json:"title"`   // as reports print it: "S/CL/P"
	Rules   string `json:"rules"`   // the abstract model's rule set: quorum, suspend, link or crash-link
	System  string `json:"system"`  // the system under test: "PostgreSQL"
	Summary string `json:"summary"` // one line for listings
	// Ops and Replicas are the default parameters of gen; OpsRange and ReplicasRange the
	// values the plugin's author has run (empty: the default only).
	Ops           int   `json:"ops"`
	Replicas      int   `json:"replicas"`
	OpsRange      []int `json:"ops_range"`
	ReplicasRange []int `json:"replicas_range"`
	// PowerLoss makes the DRM's crashes power losses (DRM.PowerLoss).
	PowerLoss bool `json:"power_loss,omitempty"`
	// Partition makes the DRM's failures partitions (DRM.Partition).
	Partition bool `json:"partition,omitempty"`
}

// DRM is the DRM that plugin declares with s, checked as Declare checks it.
func (s Spec) DRM(plugin string) (DRM, error) {
	d, err := Declare(plugin, s.Name, s.Title, s.Rules, s.System, s.Summary,
		aem.Params{Ops: s.Ops, Replicas: s.Replicas}, s.OpsRange, s.ReplicasRange)
	if err != nil {
		return d, err
	}
	r := d.Model.Rules()
	switch {
	case s.PowerLoss && s.Partition:
		return DRM{}, fmt.Errorf("plugin %s declares DRM %q: its crashes are power losses or partitions, not both", plugin, s.Name)
	case s.PowerLoss && r != aem.QuorumRules && r != aem.CrashLinkRules:
		return DRM{}, fmt.Errorf("plugin %s declares DRM %q: power loss is a crash, and rule set %s crashes no server", plugin, s.Name, r)
	case s.Partition && r != aem.QuorumRules && r != aem.LinkRules: // crash-partition says per replica
		return DRM{}, fmt.Errorf("plugin %s declares DRM %q: partitions realise the quorum rules' crashes and the link rules' link failures only, not rule set %s's", plugin, s.Name, r)
	}
	d.PowerLoss, d.Partition = s.PowerLoss, s.Partition
	if r == aem.QuorumRules && (s.PowerLoss || s.Partition) {
		kind := aem.FailPowerLoss
		if s.Partition {
			kind = aem.FailPartition
		}
		d.Model = quorumOf(s.Title, kind)
	}
	return d, nil
}

// quorumOf is the quorum model whose failures take the given kinds, which are valid.
func quorumOf(title string, kinds ...aem.Failure) aem.Model {
	m, err := aem.NewQuorumOf(title, kinds...)
	if err != nil {
		panic(err)
	}
	return m
}

// Partitions tells whether the DRM's schedules cut replicas off: a failure kind of its model
// is the partition, or its link failures are (S/N/R).
func (d DRM) Partitions() bool {
	return d.Partition || slices.Contains(d.Kinds(), aem.FailPartition)
}

// Kinds lists the failure kinds that the DRM's failing replicas take, as a realisation must
// realise them: its model's, with a crash a power loss where the DRM says its crashes are.
func (d DRM) Kinds() []aem.Failure {
	kinds := d.Model.Kinds()
	for i, k := range kinds {
		kinds[i] = d.Kind(k)
	}
	return kinds
}

// Kind is how failure f of the DRM's model is realised: a crash is a power loss where the
// DRM's crashes are (S/CL/R's, on a DRM that a plugin declares with power losses).
func (d DRM) Kind(f aem.Failure) aem.Failure {
	if f == aem.FailCrash && d.PowerLoss {
		return aem.FailPowerLoss
	}
	return f
}

// KindOf is how a replica that failed by f, as a divergence or a state of the DRM's model names
// it, is realised (Kind); a quorum model of one kind names none, and NotInLayout stands for it.
func (d DRM) KindOf(f aem.Failure) aem.Failure {
	if kinds := d.Kinds(); f == aem.NotInLayout && d.Model.Rules().Quorum() && !d.Model.FailureKinds() && len(kinds) == 1 {
		return kinds[0]
	}
	return d.Kind(f)
}

// kindSeparator joins a DRM's name and the failure kinds a composed DRM adds: "qcz+pause".
const kindSeparator = "+"

// SplitName reads a DRM name that may add failure kinds to a base DRM ("qcz+pause": qcz with
// pauses too): the base name and the added kinds, none for a plain name.
func SplitName(name string) (base string, added []aem.Failure, err error) {
	base, rest, found := strings.Cut(name, kindSeparator)
	if !found {
		return name, nil, nil
	}
	for _, k := range strings.Split(rest, kindSeparator) {
		f, err := aem.ParseFailure(k)
		if err != nil {
			return "", nil, fmt.Errorf("DRM %q: %w", name, err)
		}
		added = append(added, f)
	}
	return base, added, nil
}

// Compose returns base with its failures taking the added kinds too, named and titled base's
// name and title followed by each added kind ("qcz+pause", "Q/C/Z+pause"): for a quorum DRM the
// quorum model over every kind of both; for a crash-link one (S/CL/R's rules) its model with each
// failing replica crashed or losing power ("pgl+power-loss"), the one kind it takes. A DRM takes
// only kinds it lacks.
func Compose(base DRM, added []aem.Failure) (DRM, error) {
	if len(added) == 0 {
		return base, nil
	}
	rules := base.Model.Rules()
	if !rules.Quorum() && rules != aem.CrashLinkRules {
		return DRM{}, fmt.Errorf("DRM %s (%s rules): only a quorum or crash-link DRM's failures take other kinds", base.Name, rules)
	}
	kinds := base.Kinds()
	suffix := ""
	for _, f := range aem.Kinds { // in the kinds' order, so that one mix has one name
		if !slices.Contains(added, f) {
			continue
		}
		if slices.Contains(kinds, f) {
			return DRM{}, fmt.Errorf("DRM %s fails replicas by %s already", base.Name, f)
		}
		kinds = append(kinds, f)
		suffix += kindSeparator + f.String()
	}
	var m aem.Model
	var err error
	if rules == aem.CrashLinkRules {
		m, err = aem.NewCrashLinkOf(base.Title+suffix, kinds[1:]...)
	} else {
		m, err = aem.NewQuorumOf(base.Title+suffix, kinds...)
	}
	if err != nil {
		return DRM{}, fmt.Errorf("DRM %s: %w", base.Name+suffix, err)
	}
	d := base
	d.base = &base
	d.Name, d.Title, d.Model, d.PowerLoss, d.Partition = base.Name+suffix, base.Title+suffix, m, false, false
	d.Summary = fmt.Sprintf("%s; failures also %s", strings.TrimSpace(base.Summary), strings.ReplaceAll(strings.TrimPrefix(suffix, kindSeparator), kindSeparator, ", "))
	return d, nil
}

// Declared finds the DRM named name among specs, the DRMs that plugin declares, by short name
// or title, composed with the failure kinds the name adds (Compose); ok is false where no spec
// has the name's base, and the catalogue is the place to look.
func Declared(name, plugin string, specs []Spec) (d DRM, ok bool, err error) {
	base, added, err := SplitName(name)
	if err != nil {
		return DRM{}, true, err
	}
	for _, spec := range specs {
		if strings.EqualFold(spec.Name, base) || strings.EqualFold(spec.Title, base) {
			d, err := spec.DRM(plugin)
			if err != nil {
				return d, true, err
			}
			d, err = Compose(d, added)
			return d, true, err
		}
	}
	return DRM{}, false, nil
}

// Spec returns what the plugin declared of d, nil for a built-in DRM; of a composed DRM,
// what it declared of the base, which the composed name adds kinds to.
func (d DRM) Spec() *Spec {
	if !d.Declared {
		return nil
	}
	if d.base != nil {
		return d.base.Spec()
	}
	return &Spec{Name: d.Name, Title: d.Title, Rules: string(d.Model.Rules()), System: d.System, Summary: d.Summary,
		Ops: d.Defaults.Ops, Replicas: d.Defaults.Replicas, OpsRange: d.Ops, ReplicasRange: d.Replicas, PowerLoss: d.PowerLoss, Partition: d.Partition}
}

// Resolver finds the DRMs that plugins declare.
type Resolver interface {
	// Declared returns every DRM that the plugins found declare, in a stable order; an error
	// names a clash (two plugins that declare one name) or a plugin that could not say.
	Declared() ([]DRM, error)
	// AddDir adds a directory to search for plugins first.
	AddDir(dir string)
}

var resolver Resolver

// SetResolver makes Lookup, All and Names include the DRMs that r finds; nil removes it.
func SetResolver(r Resolver) { resolver = r }

// AddPluginDir adds dir to the directories the resolver searches, when there is a resolver.
func AddPluginDir(dir string) {
	if resolver != nil && dir != "" {
		resolver.AddDir(dir)
	}
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
		// Not in the paper: Q/C/Z's schedules with every crash a power loss, which drops what
		// the servers had not made durable; every divergence ends with the whole cluster down.
		Name: "qpz", Title: "Q/P/Z", Model: quorumOf("Q/P/Z", aem.FailPowerLoss), Plugin: "zookeeper", System: "ZooKeeper",
		Summary:  "the Q/C/Z model with power losses: a crash drops what was not fsynced",
		Defaults: aem.Params{Ops: 2, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
		PowerLoss: true,
	},
	{
		Name: "qpe", Title: "Q/P/E", Model: quorumOf("Q/P/E", aem.FailPowerLoss), Plugin: "etcd", System: "etcd",
		Summary:  "the Q/C/E model with power losses: a crash drops what was not fsynced",
		Defaults: aem.Params{Ops: 2, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
		PowerLoss: true,
	},
	{
		// Not in the paper: Q/C/Z's schedules with every crash a partition; a minority write
		// goes to a leader really cut off with its minority, and every divergence ends with
		// every replica up and cut off from every other.
		Name: "qnz", Title: "Q/N/Z", Model: quorumOf("Q/N/Z", aem.FailPartition), Plugin: "zookeeper", System: "ZooKeeper",
		Summary:  "the Q/C/Z model with partitions: a failed replica stays up, cut off from its peers",
		Defaults: aem.Params{Ops: 2, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
		Partition: true,
	},
	{
		Name: "qne", Title: "Q/N/E", Model: quorumOf("Q/N/E", aem.FailPartition), Plugin: "etcd", System: "etcd",
		Summary:  "the Q/C/E model with partitions: a failed replica stays up, cut off from its peers",
		Defaults: aem.Params{Ops: 2, Replicas: 3}, Ops: []int{1, 2, 3, 4, 5}, Replicas: []int{3, 4, 5},
		Partition: true,
	},
	{
		// Not in the paper: each replica a divergence fails is crashed or cut off by a
		// partition, both in one schedule (the crash-partition rules, docs/aem.md).
		Name: "qcnz", Title: "Q/CN/Z", Model: aem.NewCrashPartition("Q/CN/Z"), Plugin: "zookeeper", System: "ZooKeeper",
		Summary:  "the Q/C/Z model with each failed replica crashed or cut off by a partition",
		Defaults: aem.Params{Ops: 1, Replicas: 3}, Ops: []int{1, 2, 3}, Replicas: []int{3, 4, 5},
	},
	{
		Name: "qcne", Title: "Q/CN/E", Model: aem.NewCrashPartition("Q/CN/E"), Plugin: "etcd", System: "etcd",
		Summary:  "the Q/C/E model with each failed replica crashed or cut off by a partition",
		Defaults: aem.Params{Ops: 1, Replicas: 3}, Ops: []int{1, 2, 3}, Replicas: []int{3, 4, 5},
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
		// Not in the paper: S/L/R's schedules with every link failure a partition between the
		// replica and its source, where the paper's tool sent REPLICAOF NO ONE: the replica
		// goes on following a source it cannot reach until the partition heals.
		Name: "snr", Title: "S/N/R", Model: aem.NewRedisTitled(aem.Link, "S/N/R"), Plugin: "redis", System: "Redis",
		Summary:  "the S/L/R model with each link failure a partition between a replica and its source",
		Defaults: aem.Params{Ops: 1, Replicas: 3}, Ops: []int{1, 2}, Replicas: []int{3, 4},
		Partition: true,
	},
	{
		Name: "sclr", Title: "S/CL/R", Model: aem.SCLR, Plugin: "redis", System: "Redis",
		Summary:  "no quorum, crash and link failures, online and offline (snapshot) resync",
		Defaults: aem.Params{Ops: 2, Replicas: 2}, Ops: []int{1, 2}, Replicas: []int{2},
		Changed: "S/CL/R schedules and their IDs changed on 2026-11-23, when the model was corrected to the reference generator's",
	},
}

// Builtin returns the built-in DRMs, in catalogue order.
func Builtin() []DRM { return slices.Clone(catalogue) }

// All returns the built-in DRMs in catalogue order, then those that plugins declare; with
// an error from the resolver, the built-in ones and the error.
func All() ([]DRM, error) {
	all := Builtin()
	if resolver == nil {
		return all, nil
	}
	declared, err := resolver.Declared()
	return append(all, declared...), err
}

// Names returns the short names of the built-in DRMs, sorted.
func Names() []string {
	var ns []string
	for _, d := range catalogue {
		ns = append(ns, d.Name)
	}
	sort.Strings(ns)
	return ns
}

func builtin(name string) (DRM, bool) {
	for _, d := range catalogue {
		if strings.EqualFold(name, d.Name) || strings.EqualFold(name, d.Title) {
			return d, true
		}
	}
	return DRM{}, false
}

// Lookup finds a DRM by short name ("qcz") or by title ("Q/C/Z"), ignoring case: a built-in
// one, else one that a plugin declares; a name that adds failure kinds to one ("qcz+pause")
// is that DRM composed with them (Compose).
func Lookup(name string) (DRM, error) {
	base, added, err := SplitName(name)
	if err != nil {
		return DRM{}, err
	}
	if len(added) > 0 {
		d, err := Lookup(base)
		if err != nil {
			return DRM{}, err
		}
		return Compose(d, added)
	}
	if d, ok := builtin(name); ok {
		return d, nil
	}
	known := Names()
	if resolver != nil {
		declared, err := resolver.Declared()
		for _, d := range declared {
			if strings.EqualFold(name, d.Name) || strings.EqualFold(name, d.Title) {
				return d, nil
			}
			known = append(known, d.Name+" ("+d.Plugin+" plugin)")
		}
		if err != nil {
			return DRM{}, fmt.Errorf("unknown DRM %q (known: %s; and %w)", name, strings.Join(known, ", "), err)
		}
	}
	return DRM{}, fmt.Errorf("unknown DRM %q (known: %s)", name, strings.Join(known, ", "))
}
