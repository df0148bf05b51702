//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MountsUnder lists the mount points at or under dir, deepest first, as this process's mount
// namespace sees them (/proc/self/mountinfo).
func MountsUnder(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == abs || strings.HasPrefix(mp, abs+"/") {
			found = append(found, mp)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("/proc/self/mountinfo: %w", err)
	}
	slices.SortFunc(found, func(a, b string) int { return len(b) - len(a) })
	return found, nil
}

// unescapeMountinfo decodes the octal escapes (\040 for a space) of a mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// DetachMounts ends every mount at or under dir, deepest first: what a plugin that died left
// mounted (a FUSE file system whose server is gone answers every access with an error, so
// nothing could sweep or remove the directory). Each is first unmounted with MNT_FORCE, which
// aborts a FUSE mount's connection, so that no process stays blocked on a request that its dead
// server will never answer, then detached (MNT_DETACH) if it is still busy.
func DetachMounts(dir string) error {
	mounts, err := MountsUnder(dir)
	if err != nil {
		return fmt.Errorf("mounts under %s: %w", dir, err)
	}
	var errs []error
	for _, mp := range mounts {
		if unix.Unmount(mp, unix.MNT_FORCE) == nil {
			continue
		}
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("detach the mount at %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
