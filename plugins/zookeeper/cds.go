package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/proc"
)

// JVM start-up is most of what a replica's restart costs. An AppCDS archive maps the classes a
// replica loads straight into memory instead of reading and verifying them from the jars. The
// archive is made once, by a replica that runs with -XX:ArchiveClassesAtExit through a short
// training run and then exits, and reused by every later start with -XX:SharedArchiveFile. Its
// file name hashes everything that makes an archive unusable: the java binary and its module
// image, the jars, and the JVM flags. The JVM checks the archive again itself and ignores one
// that does not match, so a stale one costs speed, never correctness.

// cdsTrainingTimeout bounds making the archive, including waiting for another plugin process
// that is making the same one: a cluster's start, some writes and a JVM exit.
const cdsTrainingTimeout = 2 * time.Minute

// cdsExitTimeout bounds the training replica's exit after SIGTERM, during which it writes the
// archive.
const cdsExitTimeout = 30 * time.Second

// archiveKey names the archive for this java, these jars and these flags.
func archiveKey(in *install, flags []string) (string, error) {
	java, err := filepath.EvalSymlinks(in.java)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", in.java, err)
	}
	h := sha256.New()
	files := []string{java, filepath.Join(filepath.Dir(filepath.Dir(java)), "lib", "modules")}
	files = append(files, in.classpath...)
	files = append(files, in.deps...)
	for _, f := range files {
		fi, err := os.Stat(f)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h, "%s missing\n", f)
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, f := range flags {
		fmt.Fprintf(h, "flag %s\n", f)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// prepareCDS returns the flags that start a server with the AppCDS archive, making the
// archive first when there is none. When making it fails, servers start without one, slower
// but otherwise alike; the failure is logged.
func (s *system) prepareCDS(ctx context.Context, c *kit.Cluster) []string {
	if !*s.cfg.ClassDataSharing {
		return nil
	}
	archive, err := s.ensureArchive(ctx, c)
	if err != nil {
		hclog.L().Warn("zookeeper: starting servers without an AppCDS archive", "error", err)
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + archive}
}

func (s *system) ensureArchive(ctx context.Context, c *kit.Cluster) (string, error) {
	dir, err := s.cfg.cacheDir()
	if err != nil {
		return "", err
	}
	key, err := archiveKey(s.in, s.cfg.JVMFlags)
	if err != nil {
		return "", fmt.Errorf("AppCDS archive: %w", err)
	}
	archive := filepath.Join(dir, "zookeeper-"+s.in.version+"-"+key+".jsa")
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("AppCDS archive: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cdsTrainingTimeout)
	defer cancel()
	// Another plugin process may be making the same archive: one makes it, the others wait.
	unlock, err := lockFile(ctx, archive+".lock")
	if err != nil {
		return "", fmt.Errorf("AppCDS archive: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
	defer os.Remove(tmp)
	if err := s.trainCDS(ctx, c, tmp); err != nil {
		return "", fmt.Errorf("AppCDS archive: training run: %w", err)
	}
	if err := os.Rename(tmp, archive); err != nil {
		return "", fmt.Errorf("AppCDS archive: %w", err)
	}
	hclog.L().Info("zookeeper: made AppCDS archive", "path", archive)
	return archive, nil
}

// lockFile takes an exclusive flock on path, waiting for it as long as ctx allows.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	err = proc.WaitFor(ctx, cdsTrainingTimeout, "lock "+path, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// trainCDS runs a throw-away ensemble of the cluster's size on the cluster's own ports (no
// server of the cluster runs yet), in a directory of its own, with its first server recording
// the classes it loads into archive: it starts, takes part in an election, syncs with its
// leader, serves writes, reads, syncs and four-letter words, and then exits on SIGTERM, which
// writes the archive.
func (s *system) trainCDS(ctx context.Context, c *kit.Cluster, archive string) error {
	dir := filepath.Join(c.Spec.Dir, "cds-training")
	defer os.RemoveAll(dir)
	var train []*kit.Replica
	for _, r := range c.Replicas {
		train = append(train, &kit.Replica{Index: r.Index, Name: r.Name, Dir: filepath.Join(dir, r.Name), Host: r.Host, Ports: r.Ports, NetNS: r.NetNS})
	}
	var procs []*proc.Process
	defer func() {
		for _, p := range procs {
			_ = p.Kill(context.Background()) // best effort: the cluster's teardown sweeps its directory
		}
	}()
	for i, r := range train {
		if err := writeServerFiles(&s.cfg, r, train); err != nil {
			return err
		}
		var record []string
		if i == 0 {
			record = []string{"-XX:ArchiveClassesAtExit=" + archive}
		}
		p, err := proc.StartProcess(proc.ProcessSpec{Name: r.Name, Dir: r.Dir, Path: s.in.java, Args: s.javaArgs(r, record), NetNS: r.NetNS})
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	caughtUp := func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if !p.Running() {
				return false, fmt.Errorf("%s exited; see %s", p.Name, p.LogPath)
			}
		}
		ok, _, err := s.CaughtUp(ctx, c, train)
		return ok, err
	}
	if err := proc.WaitFor(ctx, cdsTrainingTimeout, "the training ensemble caught up", caughtUp); err != nil {
		return err
	}
	recorder := train[0]
	if err := s.Write(ctx, recorder, "training", "training"); err != nil {
		return err
	}
	if _, err := s.ReadAll(ctx, recorder); err != nil {
		return err
	}
	if err := proc.WaitFor(ctx, cdsTrainingTimeout, "the training ensemble caught up after a write", caughtUp); err != nil {
		return err
	}
	if _, err := mntr(ctx, recorder.Addr(0)); err != nil {
		return err
	}
	// SIGTERM makes the JVM exit through its shutdown sequence, which writes the archive;
	// SIGKILL would not.
	p := procs[0]
	if err := syscall.Kill(p.Pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM %s: %w", p.Name, err)
	}
	exitCtx, cancel := context.WithTimeout(ctx, cdsExitTimeout)
	defer cancel()
	_ = p.Wait(exitCtx) // it exits with 143, the status of SIGTERM
	if p.Running() {
		return fmt.Errorf("%s did not exit within %v of SIGTERM", p.Name, cdsExitTimeout)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Size() == 0 {
		return fmt.Errorf("%s exited without writing %s; see %s", p.Name, archive, p.LogPath)
	}
	return nil
}
