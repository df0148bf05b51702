//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PidFile is one pid file that StartProcess wrote: the process group a server leads, and its
// cgroup.
type PidFile struct {
	Path   string
	Pid    int    // the server's pid, also its process group ID
	Start  uint64 // the server's start time, to tell it from a later process that reuses the pid
	Cgroup string // the server's cgroup directory; empty when it ran in no cgroup
}

// ReadPidFile reads the pid file at path.
func ReadPidFile(path string) (PidFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PidFile{}, fmt.Errorf("pid file %s: %w", path, err)
	}
	f := PidFile{Path: path}
	fields := strings.Fields(string(b))
	var err1, err2 error
	if len(fields) >= 2 {
		f.Pid, err1 = strconv.Atoi(fields[0])
		f.Start, err2 = strconv.ParseUint(fields[1], 10, 64)
	}
	if len(fields) < 2 || len(fields) > 3 || err1 != nil || err2 != nil || f.Pid <= 1 {
		return PidFile{}, fmt.Errorf("pid file %s: malformed %q", path, strings.TrimSpace(string(b)))
	}
	if len(fields) == 3 {
		f.Cgroup = fields[2]
	}
	return f, nil
}

// PidFiles lists the pid files under dir, which KillLeftovers would sweep. A directory that
// does not exist holds none.
func PidFiles(dir string) ([]PidFile, error) {
	var files []PidFile
	err := walkPidFiles(dir, func(path string) error {
		f, err := ReadPidFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by a Kill meanwhile
		}
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pid files in %s: %w", dir, err)
	}
	return files, nil
}

// walkPidFiles calls each with the path of every pid file under dir; a directory that does not
// exist holds none.
func walkPidFiles(dir string, each func(path string) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), PidFileSuffix) {
			return nil
		}
		return each(path)
	})
}

// GroupAlive tells whether some process of the group that the recorded server leads or led is
// still alive. A pid that now names a process started at another time was reused after the
// group ended, as KillLeftovers reads it.
func (f PidFile) GroupAlive() (bool, error) {
	if f.Cgroup != "" {
		if alive, err := cgroupAlive(f.Cgroup); alive || err != nil {
			return alive, err
		}
	}
	if st, err := readStat(f.Pid); err == nil && st.startTime != f.Start {
		return false, nil
	}
	return GroupAlive(f.Pid)
}

// AwaitPid waits, up to timeout, until a process has written a pid and a newline into path (a
// server's or a shell's own pid file), and returns the pid.
func AwaitPid(ctx context.Context, path string, timeout time.Duration) (int, error) {
	var pid int
	err := WaitFor(ctx, timeout, "a pid in "+path, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false, nil
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil, err
	})
	return pid, err
}
