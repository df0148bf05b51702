package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/proc"
)

// grastate is what a node's grastate.dat says: the cluster state UUID, the seqno (-1 while the
// server runs or after a crash) and safe_to_bootstrap.
type grastate struct {
	uuid  string
	seqno int64
	safe  bool
}

func grastatePath(r *kit.Replica) string { return filepath.Join(dataDir(r), "grastate.dat") }

// readGrastate reads r's grastate.dat; ok is false where there is none (a node that never
// joined a cluster).
func readGrastate(r *kit.Replica) (g grastate, ok bool, err error) {
	b, err := os.ReadFile(grastatePath(r))
	if errors.Is(err, fs.ErrNotExist) {
		return grastate{seqno: -1}, false, nil
	}
	if err != nil {
		return grastate{}, false, err
	}
	return parseGrastate(string(b)), true, nil
}

func parseGrastate(text string) grastate {
	g := grastate{seqno: -1}
	for _, line := range strings.Split(text, "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "uuid":
			g.uuid = v
		case "seqno":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				g.seqno = n
			}
		case "safe_to_bootstrap":
			g.safe = v == "1"
		}
	}
	return g
}

var safeLine = regexp.MustCompile(`(?m)^safe_to_bootstrap:.*$`)

// markSafe sets safe_to_bootstrap: 1 in r's grastate.dat, as Galera's documentation has the
// operator do on the node to bootstrap after every node went down.
func markSafe(r *kit.Replica) error {
	b, err := os.ReadFile(grastatePath(r))
	if err != nil {
		return err
	}
	if !safeLine.Match(b) {
		return fmt.Errorf("%s has no safe_to_bootstrap line: %q", grastatePath(r), b)
	}
	return os.WriteFile(grastatePath(r), safeLine.ReplaceAll(b, []byte("safe_to_bootstrap: 1")), 0o660)
}

// recoveredPosition finds "WSREP: Recovered position: uuid:seqno" in mariadbd --wsrep-recover's
// output.
func recoveredPosition(out string) (uuid string, seqno int64, err error) {
	const marker = "WSREP: Recovered position:"
	i := strings.LastIndex(out, marker)
	if i < 0 {
		return "", 0, fmt.Errorf("no %q in its output", marker)
	}
	pos, _, _ := strings.Cut(strings.TrimSpace(out[i+len(marker):]), "\n")
	u, n, ok := strings.Cut(strings.TrimSpace(pos), ":")
	seqno, perr := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if !ok || perr != nil {
		return "", 0, fmt.Errorf("position %q", pos)
	}
	return u, seqno, nil
}

// recover runs mariadbd --wsrep-recover on r's stopped server, in r's network namespace as the
// servers' user, as Debian's galera_recovery does, and returns the position it recovers. The
// process is ended on every path.
func (s *system) recover(ctx context.Context, c *kit.Cluster, r *kit.Replica) (string, int64, error) {
	if err := s.prepareStart(c, r); err != nil {
		return "", 0, err
	}
	name := r.Name + "-recover"
	logPath := filepath.Join(r.Dir, name+".log")
	from := int64(0)
	if fi, err := os.Stat(logPath); err == nil {
		from = fi.Size()
	}
	argv := append(s.asOwner(), s.cfg.Server, "--defaults-file="+cnfPath(r), "--wsrep-recover", "--disable-log-error")
	p, err := proc.StartProcess(proc.ProcessSpec{Name: name, Dir: r.Dir, Path: argv[0], Args: argv[1:], NetNS: r.NetNS})
	if err != nil {
		return "", 0, err
	}
	defer p.Kill(context.WithoutCancel(ctx))
	werr := p.Wait(ctx)
	out, err := readFrom(logPath, from)
	if err != nil {
		return "", 0, err
	}
	if werr != nil && ctx.Err() == nil {
		return "", 0, &recoverFailed{node: r.Name, err: werr, out: out}
	}
	if werr != nil {
		return "", 0, fmt.Errorf("%s: mariadbd --wsrep-recover: %w", r.Name, werr)
	}
	uuid, seqno, err := recoveredPosition(out)
	if err != nil {
		return "", 0, fmt.Errorf("%s: mariadbd --wsrep-recover: %w; its output:\n%s", r.Name, err, out)
	}
	return uuid, seqno, nil
}

// recoverFailed is mariadbd --wsrep-recover ending in failure on a node: the server could not
// recover what a failure left (InnoDB's "Unable to apply log to corrupted page" after a power
// loss), the system's answer, not the harness's.
type recoverFailed struct {
	node, out string
	err       error
}

func (e *recoverFailed) Error() string {
	return fmt.Sprintf("%s: mariadbd --wsrep-recover: %v; its output:\n%s", e.node, e.err, e.out)
}

func readFrom(path string, from int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	return string(b), err
}

// StartGroup decides how group starts. Where a running server is in a primary component,
// nobody bootstraps: the group's nodes start (or are healed, or go on) and join it, one by one,
// running ones first. Where none is (every server down: the cluster's start, or after a
// divergence that crashed every node; or every running one outside any primary component, cut
// off or left alone), the group is bootstrapped as Galera's documentation prescribes ("Resetting
// the Quorum"): the most advanced node of the group bootstraps first (bootstrap), and each of
// the others starts once the one before serves. A running server that does not answer (a
// paused one) leaves it unknown whether a primary component remains: then Galera alone decides.
func (s *system) StartGroup(ctx context.Context, c *kit.Cluster, group, running []*kit.Replica) ([]*kit.Replica, bool, error) {
	s.bootstrap = nil
	order := slices.Clone(group)
	slices.SortStableFunc(order, func(a, b *kit.Replica) int {
		return boolInt(!slices.Contains(running, a)) - boolInt(!slices.Contains(running, b))
	})
	committed := map[*kit.Replica]int64{} // of the running servers, outside any primary component
	var silent []string
	for _, r := range running {
		st, err := readStatus(ctx, r)
		switch {
		case err != nil:
			silent = append(silent, r.Name)
		case st.primary():
			return order, true, nil
		default:
			committed[r], _ = strconv.ParseInt(st["last_committed"], 10, 64)
		}
	}
	if len(silent) > 0 {
		c.Record(nil, "no bootstrap: %s do not answer, and may be in a primary component", strings.Join(silent, ", "))
		return order, true, nil
	}
	first, err := s.bootstrapGroup(ctx, c, group, committed)
	if err != nil {
		return nil, false, err
	}
	order = slices.DeleteFunc(order, func(r *kit.Replica) bool { return r == first })
	return append([]*kit.Replica{first}, order...), true, nil
}

// bootstrapGroup bootstraps the most advanced node of group, none of whose nodes is in a primary
// component: the highest seqno (wsrep_last_committed of a running node, committed; of a stopped
// one, its grastate.dat's, or mariadbd --wsrep-recover's where that says -1), the lowest index
// among equals. A running node is bootstrapped at once (SET GLOBAL wsrep_provider_options =
// 'pc.bootstrap=YES'); a stopped one gets safe_to_bootstrap: 1 and starts with
// --wsrep-new-cluster (Command). At the cluster's start, where no node has a grastate.dat,
// the first node bootstraps the new cluster.
func (s *system) bootstrapGroup(ctx context.Context, c *kit.Cluster, group []*kit.Replica, committed map[*kit.Replica]int64) (*kit.Replica, error) {
	byIndex := slices.Clone(group)
	slices.SortFunc(byIndex, func(a, b *kit.Replica) int { return a.Index - b.Index })
	states, has := make([]grastate, len(byIndex)), make([]bool, len(byIndex))
	known := len(committed) > 0 // not the cluster's start
	for i, r := range byIndex {
		if seqno, ok := committed[r]; ok {
			states[i] = grastate{seqno: seqno}
			continue
		}
		g, ok, err := readGrastate(r)
		if err != nil {
			return nil, err
		}
		states[i], has[i], known = g, ok, known || ok
	}
	var seen []string
	for i, r := range byIndex {
		_, up := committed[r]
		if known && !up && states[i].seqno < 0 {
			var err error
			var failed *recoverFailed
			states[i].uuid, states[i].seqno, err = s.recover(ctx, c, r)
			switch {
			case errors.As(err, &failed):
				// Debian's mariadb.service does not start a node whose galera_recovery fails;
				// its start below fails as well, which the kit judges the system's.
				states[i].seqno = -2
				c.Record(r, "mariadbd --wsrep-recover failed (%v), so it is not bootstrapped: %s", failed.err,
					strings.Join(kit.ErrorLines(strings.Split(strings.TrimSpace(failed.out), "\n"), 3), " | "))
				seen = append(seen, r.Name+" unrecovered")
				continue
			case err != nil:
				return nil, err
			}
			why := "grastate.dat says -1"
			if !has[i] {
				why = "no grastate.dat"
			}
			c.Record(r, "mariadbd --wsrep-recover: seqno %d (%s)", states[i].seqno, why)
		}
		seen = append(seen, fmt.Sprintf("%s %d", r.Name, states[i].seqno))
	}
	running := make([]bool, len(byIndex))
	for i, r := range byIndex {
		_, running[i] = committed[r]
	}
	first := pickBootstrap(states, running)
	r := byIndex[first]
	_, up := committed[r]
	why := fmt.Sprintf("no node is in a primary component, and it is the most advanced (seqno %s)", strings.Join(seen, ", "))
	if states[first].seqno == -2 {
		why = fmt.Sprintf("no node is in a primary component, and no node's position could be recovered (%s)", strings.Join(seen, ", "))
	}
	switch {
	case !known:
		c.Record(r, "bootstraps the new cluster")
		s.bootstrap = r
	case up:
		if _, err := sql(ctx, r, "SET GLOBAL wsrep_provider_options = 'pc.bootstrap=YES'"); err != nil {
			return nil, fmt.Errorf("%s: pc.bootstrap: %w", r.Name, err)
		}
		c.Record(r, "SET GLOBAL wsrep_provider_options = 'pc.bootstrap=YES': %s", why)
	default:
		if has[first] && !states[first].safe {
			if err := markSafe(r); err != nil {
				return nil, err
			}
		}
		c.Record(r, "safe_to_bootstrap: 1 in its grastate.dat, to start with --wsrep-new-cluster: %s", why)
		s.bootstrap = r
	}
	return r, nil
}

// pickBootstrap is the node to bootstrap among states (by index): the most advanced, and
// among equals a running one, the lowest index first. A running node is bootstrapped by
// pc.bootstrap, Galera's automatic bootstrap, which its documentation recommends and prescribes
// where other nodes crashed ("Crash Recovery"); --wsrep-new-cluster on a stopped node is the
// manual one, for every node down: beside a running node of the old primary component, the
// running node's stale primary wins the re-merge that follows a failed merge, and the new
// cluster aborts ("Reversing history ... Must abort"), as a crash+partition campaign showed.
func pickBootstrap(states []grastate, running []bool) int {
	first := 0
	for i := range states {
		switch {
		case states[i].seqno > states[first].seqno:
			first = i
		case states[i].seqno == states[first].seqno && running[i] && !running[first]:
			first = i
		}
	}
	return first
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
