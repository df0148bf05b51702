package aem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The compact text of a transition, as schedule files hold it:
//
//	D[1,0,0]        divergence: writes each replica receives
//	D[1,0](n,c)     with failure kinds: n none, c crash, - not in the layout (S/CL/R);
//	                c crash, l power loss, p partition, s pause (quorum models of
//	                several kinds)
//	C[0,1]          convergence: the replicas that come back
//	C[1]<-,0,1>     with every replica's source afterwards, - for none (Redis models)
//	C[1]<0,->off1   offline resync: off1 or off2 (S/CL/R)

// String returns the compact text of t.
func (t Transition) String() string { return string(t.AppendText(nil)) }

// AppendText appends the compact text of t to b.
func (t *Transition) AppendText(b []byte) []byte {
	b = append(b, t.Kind.String()...)
	if t.Kind == Divergence {
		b = appendInts(b, '[', ']', t.Writes)
		if t.Failures != nil {
			b = append(b, '(')
			for i, f := range t.Failures {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, failureLetters[f])
			}
			b = append(b, ')')
		}
		return b
	}
	b = appendInts(b, '[', ']', t.Group)
	if t.Sources != nil {
		b = appendInts(b, '<', '>', t.Sources)
	}
	switch t.Resync {
	case Offline1:
		b = append(b, "off1"...)
	case Offline2:
		b = append(b, "off2"...)
	}
	return b
}

var failureLetters = [...]byte{NotInLayout: '-', FailNone: 'n', FailCrash: 'c', FailPartition: 'p', FailPowerLoss: 'l', FailPause: 's', FailDiskError: 'e', FailCorruption: 'b'}

// Letter is the failure kind's letter in a schedule's divergences.
func (f Failure) Letter() byte { return failureLetters[f] }

var failureVerbs = [...]string{FailCrash: "crashes", FailPowerLoss: "loses power", FailPartition: "is cut off", FailPause: "pauses", FailDiskError: "has its disk fail", FailCorruption: "has a file corrupted"}

// Verb says what a divergence does to a replica that fails by the kind ("crashes", "is cut
// off"); empty for NotInLayout and FailNone, which fail nothing.
func (f Failure) Verb() string { return failureVerbs[f] }

func appendInts(b []byte, open, close byte, xs []int) []byte {
	b = append(b, open)
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		if x == NoSource {
			b = append(b, '-')
		} else {
			b = strconv.AppendInt(b, int64(x), 10)
		}
	}
	return append(b, close)
}

// ParseTransition parses the compact text of one transition. It checks the syntax only; Replay
// checks that the step is enabled.
func ParseTransition(s string) (Transition, error) {
	var t Transition
	if s == "" {
		return t, errors.New("empty transition")
	}
	switch s[0] {
	case 'D':
		t.Kind = Divergence
	case 'C':
		t.Kind = Convergence
	default:
		return t, fmt.Errorf("transition %q: must start with D or C", s)
	}
	first, rest, err := cutList(s[1:], '[', ']')
	if err != nil {
		return t, fmt.Errorf("transition %q: %w", s, err)
	}
	nums, err := parseInts(first, false)
	if err != nil {
		return t, fmt.Errorf("transition %q: %w", s, err)
	}
	if t.Kind == Divergence {
		t.Writes = nums
		if rest != "" {
			var fs string
			fs, rest, err = cutList(rest, '(', ')')
			if err != nil {
				return t, fmt.Errorf("transition %q: %w", s, err)
			}
			for _, f := range strings.Split(fs, ",") {
				k := -1
				if len(f) == 1 {
					k = strings.IndexByte(string(failureLetters[:]), f[0])
				}
				if k < 0 {
					return t, fmt.Errorf("transition %q: failure kind %q is not n, c, l, p, s or -", s, f)
				}
				t.Failures = append(t.Failures, Failure(k))
			}
		}
	} else {
		t.Group = nums
		if strings.HasPrefix(rest, "<") {
			var ls string
			ls, rest, err = cutList(rest, '<', '>')
			if err != nil {
				return t, fmt.Errorf("transition %q: %w", s, err)
			}
			if t.Sources, err = parseInts(ls, true); err != nil {
				return t, fmt.Errorf("transition %q: %w", s, err)
			}
		}
		switch rest {
		case "off1":
			t.Resync, rest = Offline1, ""
		case "off2":
			t.Resync, rest = Offline2, ""
		}
	}
	if rest != "" {
		return t, fmt.Errorf("transition %q: unexpected %q at the end", s, rest)
	}
	return t, nil
}

func cutList(s string, open, close byte) (inner, rest string, err error) {
	if s == "" || s[0] != open {
		return "", "", fmt.Errorf("expected %q", open)
	}
	end := strings.IndexByte(s, close)
	if end < 0 {
		return "", "", fmt.Errorf("missing %q", close)
	}
	return s[1:end], s[end+1:], nil
}

func parseInts(s string, dash bool) ([]int, error) {
	if s == "" {
		return nil, errors.New("empty list")
	}
	parts := strings.Split(s, ",")
	xs := make([]int, len(parts))
	for i, p := range parts {
		if dash && p == "-" {
			xs[i] = NoSource
			continue
		}
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || p != strconv.Itoa(x) {
			return nil, fmt.Errorf("%q is not a non-negative number", p)
		}
		xs[i] = x
	}
	return xs, nil
}

// Paper renders t as the Modulo paper prints schedules: "D-> [0, 0, 1]", "C-> [0, 1]", with the
// links and resync kind of the Redis models after it.
func (t *Transition) Paper() string {
	var b strings.Builder
	b.WriteString(t.Kind.String() + "-> ")
	list := t.Writes
	if t.Kind == Convergence {
		list = t.Group
	}
	b.WriteString(strings.ReplaceAll(fmt.Sprint(list), " ", ", "))
	if t.Failures != nil {
		var fs []string
		for i, f := range t.Failures {
			if f != NotInLayout {
				fs = append(fs, strconv.Itoa(i)+":"+f.String())
			}
		}
		b.WriteString("  failures " + strings.Join(fs, " "))
	}
	if t.Sources != nil {
		b.WriteString("  links " + FormatLinks(t.Sources))
	}
	switch t.Resync {
	case Offline1:
		b.WriteString("  offline resync 1")
	case Offline2:
		b.WriteString("  offline resync 2")
	}
	return b.String()
}

// FormatLinks renders replication links as "1<-0 2<-1", or "none".
func FormatLinks(src []int) string {
	var ls []string
	for i, p := range src {
		if p != NoSource {
			ls = append(ls, fmt.Sprintf("%d<-%d", i, p))
		}
	}
	if len(ls) == 0 {
		return "none"
	}
	return strings.Join(ls, " ")
}

// String renders a state for people: versions, who is online, links and crashes.
func (s State) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "left=%d rs=%v online=[", s.Left, s.RS)
	for i, on := range s.On {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case on:
			b.WriteByte('+')
		case s.FailedAs(i) == FailCrash:
			b.WriteByte('x')
		case s.FailedAs(i) == FailPowerLoss || s.FailedAs(i) == FailPause:
			b.WriteByte(failureLetters[s.FailedAs(i)])
		default:
			b.WriteByte('-')
		}
	}
	b.WriteByte(']')
	if s.Src != nil {
		b.WriteString(" links " + FormatLinks(s.Src))
	}
	return b.String()
}
