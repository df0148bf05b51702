// Package shortsuite proves what the README promises of `go test -short ./...`: it starts no
// server, no JVM and no browser, mounts nothing and makes no network namespace. Its test runs
// the module's short suite under strace(1) (StraceArgs); Read reads every program executed,
// every mount and every network namespace made from the trace, and Offences names
// those that Rules do not allow.
package shortsuite

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// StraceArgs are strace's options for a trace that Read reads, written to file: every process
// followed, only the calls that succeeded, and only those that start a program, mount or make
// a network namespace, and the clones that tell who started whom.
func StraceArgs(file string) []string {
	return []string{"-f", "-z", "-qq", "--seccomp-bpf", "-s", "4096", "-e", "signal=none",
		"-e", "trace=execve,execveat,clone,clone3,fork,vfork,unshare,mount,fsmount,move_mount",
		"-o", file}
}

// Rules say which programs the short suite may run; everything else it runs is an offence.
type Rules struct {
	// GOROOT holds the toolchain: the go command and every tool it runs.
	GOROOT string
	// TempDir is where the go command makes its work directories (go-build*), in which it
	// links test binaries, and where each test's own directories are (t.TempDir: Test*).
	TempDir string
	// CC is cgo's C compiler as the go command runs it (go env CC, looked up in $PATH); what
	// the compiler runs in turn (cc1, as, collect2, ld) is its own business.
	CC string
}

// standIns are the base system's programs that tests run as stand-in processes, none of them
// a server: sh to script a process tree, sleep for a process that lives on, setsid for one that
// leaves its group, true for one that exits at once.
var standIns = []string{"sh", "sleep", "setsid", "true"}

// An Offence is something the short suite must not do, with how often it happened.
type Offence struct {
	// What says it: "runs /usr/bin/java (started by zookeeper.test)", "mounts fuse.x (by
	// powerfs.test)", "makes a network namespace (unshare, by netns.test)".
	What string
	// Count is how many times it happened.
	Count int
	// Example is the first time's command line or call.
	Example string
}

func (o Offence) String() string {
	return fmt.Sprintf("%s, %d times; the first: %s", o.What, o.Count, o.Example)
}

// start is a program started, and by what.
type start struct {
	path  string
	argv  []string // argv[0] first
	chain []string // the programs of the processes it descends from, nearest first
}

// Trace is what a trace holds: the programs started and the offences that are not programs.
type Trace struct {
	starts []start
	other  []Offence // mounts and network namespaces, one per call
}

// line is a syscall line of strace's: "PID name(args) = ret", its args and return value.
var line = regexp.MustCompile(`^(\d+)\s+(\w+)\((.*)\)\s+= (\S+)`)

// unnamed is the start of a call strace could not name.
var unnamed = regexp.MustCompile(`^\s*\d+\s+\?\?\?\(`)

// call is one call of the trace.
type call struct {
	tid             int
	name, args, ret string
	text            string
}

// calls reads the trace's calls, each whole: a call that another process's interrupted is
// printed in two halves, joined here.
func calls(r io.Reader) ([]call, error) {
	var out []call
	pending := map[int]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		text := sc.Text()
		// A thread's call that strace could not name yet, "PID ???(", is cut short by the
		// next line, which then follows it on the same line.
		for {
			loc := unnamed.FindStringIndex(text)
			if loc == nil {
				break
			}
			text = text[loc[1]:]
		}
		pidText, rest, _ := strings.Cut(strings.TrimLeft(text, " "), " ")
		tid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		if head, ok := strings.CutSuffix(text, " <unfinished ...>"); ok {
			pending[tid] = head
			continue
		}
		if rest = strings.TrimLeft(rest, " "); strings.HasPrefix(rest, "<... ") {
			_, after, _ := strings.Cut(rest, " resumed>")
			text = pending[tid] + after
			delete(pending, tid)
		}
		if m := line.FindStringSubmatch(text); m != nil {
			out = append(out, call{tid: tid, name: m[2], args: m[3], ret: m[4], text: text})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the trace: %w", err)
	}
	return out, nil
}

// tree is who started whom: each thread's creator, and which threads are threads of a
// process rather than processes of their own. A child's first calls can come before the
// clone that made it (a vfork returns once the child has exec'd), so the tree is read whole
// before anything else.
type tree struct {
	creator map[int]int
	thread  map[int]bool
	prog    map[int]string // the program each process last executed
}

// leader is the process that thread tid belongs to.
func (tr *tree) leader(tid int) int {
	for i := 0; tr.thread[tid] && i < maxDepth; i++ {
		tid = tr.creator[tid]
	}
	return tid
}

// parent is the process that started process pid, 0 when the trace does not say.
func (tr *tree) parent(pid int) int {
	if c, ok := tr.creator[pid]; ok {
		return tr.leader(c)
	}
	return 0
}

// maxDepth bounds a walk up the tree: a pid the kernel reused could make a loop of it.
const maxDepth = 64

// progOf is the program process pid runs: the last it executed, or its parent's.
func (tr *tree) progOf(pid int) string {
	for i := 0; pid != 0 && i < maxDepth; i, pid = i+1, tr.parent(pid) {
		if p, ok := tr.prog[pid]; ok {
			return p
		}
	}
	return ""
}

// chain names the programs of process pid and its ancestors, nearest first, up to the test
// binary that started them.
func (tr *tree) chain(pid int) []string {
	var names []string
	for i := 0; pid != 0 && i < maxDepth && len(names) < 8; i, pid = i+1, tr.parent(pid) {
		prog := tr.progOf(pid)
		if prog == "" {
			continue
		}
		name := filepath.Base(prog)
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
		if strings.HasSuffix(name, ".test") {
			break
		}
	}
	return names
}

// by says which programs a call was made by, for an offence.
func (tr *tree) by(tid int) string {
	if c := tr.chain(tr.leader(tid)); len(c) > 0 {
		return strings.Join(c, " < ")
	}
	return "a process the trace does not name"
}

// Read reads a trace written with StraceArgs.
func Read(r io.Reader) (*Trace, error) {
	cs, err := calls(r)
	if err != nil {
		return nil, err
	}
	tr := &tree{creator: map[int]int{}, thread: map[int]bool{}, prog: map[int]string{}}
	for _, c := range cs {
		switch c.name {
		case "clone", "clone3", "fork", "vfork":
			if child, err := strconv.Atoi(c.ret); err == nil {
				tr.creator[child] = c.tid
				tr.thread[child] = strings.Contains(c.args, "CLONE_THREAD")
			}
		}
	}
	t := &Trace{}
	for _, c := range cs {
		switch c.name {
		case "clone", "clone3", "fork", "vfork":
			if strings.Contains(c.args, "CLONE_NEWNET") {
				t.other = append(t.other, Offence{What: "makes a network namespace (" + c.name + ", by " + tr.by(c.tid) + ")", Example: c.text})
			}
		case "execve", "execveat":
			strs := quoted(c.args)
			if len(strs) == 0 {
				continue
			}
			pid := tr.leader(c.tid)
			path := strs[0]
			if path == "/proc/self/exe" {
				path = tr.progOf(pid)
			}
			e := start{path: path, argv: strs[1:], chain: tr.chain(tr.parent(pid))}
			tr.prog[pid] = path
			t.starts = append(t.starts, e)
		case "unshare":
			if strings.Contains(c.args, "CLONE_NEWNET") {
				t.other = append(t.other, Offence{What: "makes a network namespace (unshare, by " + tr.by(c.tid) + ")", Example: c.text})
			}
		case "mount":
			fstype := "a bind or a change of flags"
			if strs := quoted(c.args); len(strs) >= 3 {
				fstype = strs[2]
			}
			t.other = append(t.other, Offence{What: "mounts " + fstype + " (by " + tr.by(c.tid) + ")", Example: c.text})
		case "fsmount", "move_mount":
			t.other = append(t.other, Offence{What: "mounts (" + c.name + ", by " + tr.by(c.tid) + ")", Example: c.text})
		}
	}
	return t, nil
}

// quoted returns the double-quoted strings of strace's rendering of arguments, in order,
// unescaped; a string strace cut short keeps what it printed.
func quoted(args string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(args) && args[j] != '"' {
			if args[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(args) {
			break
		}
		raw := args[i : j+1]
		s, err := strconv.Unquote(raw)
		if err != nil {
			s = raw[1 : len(raw)-1]
		}
		out = append(out, s)
		i = j
	}
	return out
}

// Programs are the programs the trace shows started, each once, in the order they first were.
func (t *Trace) Programs() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.starts {
		if !seen[s.path] {
			seen[s.path] = true
			out = append(out, s.path)
		}
	}
	return out
}

// Offences are the trace's offences under r, grouped by what they are, most frequent first.
func (t *Trace) Offences(r Rules) []Offence {
	var all []Offence
	for _, e := range t.starts {
		if r.allows(e) {
			continue
		}
		by := strings.Join(e.chain, " < ")
		if by == "" {
			by = "a process the trace does not name"
		}
		all = append(all, Offence{What: "runs " + e.path + " (started by " + by + ")",
			Example: strings.Join(e.argv, " ")})
	}
	all = append(all, t.other...)
	var grouped []Offence
	at := map[string]int{}
	for _, o := range all {
		if i, ok := at[o.What]; ok {
			grouped[i].Count++
			continue
		}
		at[o.What] = len(grouped)
		o.Count = 1
		grouped = append(grouped, o)
	}
	slices.SortStableFunc(grouped, func(a, b Offence) int { return cmp.Compare(b.Count, a.Count) })
	return grouped
}

// allows tells whether the short suite may run e: a program of the toolchain, one the go
// command linked in its work directory (a test binary), one in a test's own temporary
// directory (a plugin or a server stand-in that the test built with go build or wrote as a
// script), the C compiler and whatever it runs, or a stand-in of the base system's. What a
// program allowed runs in turn is judged on its own: a stand-in script that started a server
// would show as the server.
func (r Rules) allows(e start) bool {
	under := func(dir, path string) bool {
		rel, err := filepath.Rel(dir, path)
		return err == nil && filepath.IsAbs(path) && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	switch {
	case r.GOROOT != "" && under(r.GOROOT, e.path):
		return true
	case r.TempDir != "" && strings.HasPrefix(e.path, filepath.Join(r.TempDir, "go-build")):
		return true
	case r.TempDir != "" && strings.HasPrefix(e.path, filepath.Join(r.TempDir, "Test")):
		return true
	case r.CC != "" && (e.path == r.CC || slices.Contains(e.chain, filepath.Base(r.CC))):
		return true
	}
	dir := filepath.Dir(e.path)
	return (dir == "/bin" || dir == "/usr/bin") && slices.Contains(standIns, filepath.Base(e.path))
}
