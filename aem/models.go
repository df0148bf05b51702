package aem

import (
	"fmt"
	"strings"
)

// The five models of the Modulo paper.
var (
	QCZ  Model = NewQuorum("Q/C/Z")
	QCM  Model = NewQuorum("Q/C/M")
	SSR  Model = NewRedis(Suspend)
	SLR  Model = NewRedis(Link)
	SCLR Model = NewRedis(CrashLink)
)

// Rules names a model's rule set: every model is one of four, under a title of its own
// ("Q/C/Z" and "Q/C/M" are one rule set on two systems).
type Rules string

// The rule sets, each named after the paper's model that uses it.
const (
	QuorumRules    Rules = "quorum"     // Q/C/Z: crash failures, a quorum, automatic resync
	SuspendRules   Rules = "suspend"    // S/S/R: suspend failures, resync over links
	LinkRules      Rules = "link"       // S/L/R: link failures on a replication chain
	CrashLinkRules Rules = "crash-link" // S/CL/R: crash and link failures, online and offline resync
	// CrashPartitionRules: the quorum rules with each failing replica crashed or cut off by a
	// partition (not in the paper).
	CrashPartitionRules Rules = "crash-partition"
)

// Quorum tells whether rules r have a quorum and automatic resync (the quorum rules and
// crash-partition).
func (r Rules) Quorum() bool { return r == QuorumRules || r == CrashPartitionRules }

// AllRules lists the rule sets.
var AllRules = []Rules{QuorumRules, SuspendRules, LinkRules, CrashLinkRules, CrashPartitionRules}

// ParseRules reads a rule set by its name, or by the short name of the paper's model that
// uses it (qcz, ssr, slr, sclr), ignoring case.
func ParseRules(name string) (Rules, error) {
	switch strings.ToLower(name) {
	case "quorum", "qcz":
		return QuorumRules, nil
	case "suspend", "ssr":
		return SuspendRules, nil
	case "link", "slr":
		return LinkRules, nil
	case "crash-link", "sclr":
		return CrashLinkRules, nil
	case "crash-partition":
		return CrashPartitionRules, nil
	}
	return "", fmt.Errorf("unknown rule set %q (quorum or qcz, suspend or ssr, link or slr, crash-link or sclr, crash-partition)", name)
}

// New returns the model of rule set r under title.
func New(r Rules, title string) (Model, error) {
	if title == "" {
		return nil, fmt.Errorf("a model of rule set %s needs a title", r)
	}
	switch r {
	case QuorumRules:
		return NewQuorum(title), nil
	case CrashPartitionRules:
		return NewCrashPartition(title), nil
	case SuspendRules:
		return NewRedisTitled(Suspend, title), nil
	case LinkRules:
		return NewRedisTitled(Link, title), nil
	case CrashLinkRules:
		return NewRedisTitled(CrashLink, title), nil
	}
	return nil, fmt.Errorf("unknown rule set %q", r)
}
