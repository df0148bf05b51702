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

	"github.com/modulo-testing/modulo/cem"
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

// prepareCDS returns the flags that start a replica with the AppCDS archive, making the
// archive first when there is none. When making it fails, replicas start without one, slower
// but otherwise alike; the failure is logged.
func (c *cluster) prepareCDS(ctx context.Context) []string {
	if !*c.cfg.ClassDataSharing {
		return nil
	}
	archive, err := c.ensureArchive(ctx)
	if err != nil {
		hclog.L().Warn("zookeeper: starting replicas without an AppCDS archive", "error", err)
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + archive}
}

func (c *cluster) ensureArchive(ctx context.Context) (string, error) {
	dir, err := c.cfg.cacheDir()
	if err != nil {
		return "", err
	}
	key, err := archiveKey(c.install, c.cfg.JVMFlags)
	if err != nil {
		return "", fmt.Errorf("AppCDS archive: %w", err)
	}
	archive := filepath.Join(dir, "zookeeper-"+c.install.version+"-"+key+".jsa")
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
	if err := c.trainCDS(ctx, tmp); err != nil {
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
	err = cem.WaitFor(ctx, cdsTrainingTimeout, "lock "+path, func(context.Context) (bool, error) {
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

// trainCDS runs a throw-away ensemble of the cluster's size on the cluster's own ports, in a
// directory of its own, with replica 0 recording the classes it loads into archive: it starts,
// takes part in an election, syncs with its leader, serves writes, reads, syncs and
// four-letter words, and then exits on SIGTERM, which writes the archive.
func (c *cluster) trainCDS(ctx context.Context, archive string) error {
	dir := filepath.Join(c.spec.Dir, "cds-training")
	defer os.RemoveAll(dir)
	train := &cluster{
		spec: c.spec, cfg: c.cfg, install: c.install, log4jFile: c.log4jFile,
		timeout: cdsTrainingTimeout,
	}
	for i := range c.spec.Replicas {
		train.replicas = append(train.replicas, newReplica(dir, i, c.spec.BasePort))
	}
	defer train.killAll(context.Background())
	recorder := train.replicas[0]
	for _, r := range train.replicas {
		if err := r.prepare(&train.cfg, train.replicas); err != nil {
			return err
		}
		extra := []string(nil)
		if r == recorder {
			extra = []string{"-XX:ArchiveClassesAtExit=" + archive}
		}
		p, err := cem.StartProcess(cem.ProcessSpec{
			Name: r.name, Dir: r.dir, Path: c.install.java,
			Args: javaArgs(&train.cfg, c.install, c.log4jFile, r.configPath(), extra),
		})
		if err != nil {
			return err
		}
		r.proc = p
	}
	online := train.replicas
	if _, err := train.awaitSynced(ctx, -1, online, nil, true, nil); err != nil {
		return err
	}
	s, err := openSession(ctx, recorder.clientAddr())
	if err != nil {
		return err
	}
	defer s.close()
	for _, p := range []string{"/modulo", "/modulo/training"} {
		if err := s.create(ctx, p, []byte("training")); err != nil {
			return err
		}
	}
	if err := s.sync(ctx, "/modulo"); err != nil {
		return err
	}
	if _, err := s.readChildren(ctx, "/modulo"); err != nil {
		return err
	}
	if _, err := train.awaitSynced(ctx, -1, online, nil, false, nil); err != nil {
		return err
	}
	if _, err := mntr(ctx, recorder.clientAddr()); err != nil {
		return err
	}
	// SIGTERM makes the JVM exit through its shutdown sequence, which writes the archive;
	// SIGKILL would not.
	if err := syscall.Kill(recorder.proc.Pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM %s: %w", recorder.name, err)
	}
	exitCtx, cancel := context.WithTimeout(ctx, cdsExitTimeout)
	defer cancel()
	_ = recorder.proc.Wait(exitCtx) // it exits with 143, the status of SIGTERM
	if recorder.proc.Running() {
		return fmt.Errorf("%s did not exit within %v of SIGTERM", recorder.name, cdsExitTimeout)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Size() == 0 {
		return fmt.Errorf("%s exited without writing %s; see %s", recorder.name, archive, recorder.proc.LogPath)
	}
	return nil
}
