//go:build linux

package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ShmDir is where POSIX shared memory lives (shm_open). A file there outlives the server that
// made it unless the server removes it, and a SIGKILLed server removes nothing; an IPC
// namespace does not hold it.
const ShmDir = "/dev/shm"

// GroupSharedMemory lists the files under ShmDir that the processes of the process groups
// pgids map or hold open: what they leave behind if they are killed.
func GroupSharedMemory(pgids ...int) ([]string, error) {
	members, err := groupsPids(pgids...)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(path string) {
		if strings.HasPrefix(path, ShmDir+"/") && !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	for _, pids := range members {
		for _, pid := range pids {
			dir := filepath.Join("/proc", strconv.Itoa(pid))
			fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
			for _, fd := range fds {
				link, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
				add(strings.TrimSuffix(link, " (deleted)"))
			}
			f, err := os.Open(filepath.Join(dir, "maps"))
			if err != nil {
				continue // it exited, or is another user's
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				// address perms offset dev inode path: the path is the sixth field, if any
				if fields := strings.Fields(sc.Text()); len(fields) >= 6 {
					add(fields[5])
				}
			}
			f.Close()
		}
	}
	slices.Sort(out)
	return out, nil
}
