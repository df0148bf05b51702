package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// OutputRule is what WriteFile does, in the words a command's help uses.
const OutputRule = `A FILE that does not exist yet or is a regular file is written whole or not at all: through a
temporary file beside it, renamed over it (through a symbolic link, the file it names is
replaced and the link stays). Any other FILE (a device such as /dev/null, a FIFO, a terminal),
or a link to one, is opened and written in place, never removed or renamed over.`

// WriteFile writes what write produces to path, by the one rule every file modulo writes
// follows (OutputRule):
//   - where path does not exist, or names a regular file (itself or through symbolic links),
//     write goes to a synced temporary file beside that file, renamed over it, so that the file
//     holds its old content or its new one, never half; a new file gets perm, a replaced one
//     keeps its mode;
//   - where path names a character or block device or a FIFO, itself or through links, it is
//     opened for writing as it is (a FIFO waits for its reader) and never removed, renamed over
//     or created: renaming a temporary file over /dev/null would replace the machine's
//     /dev/null with a regular file;
//   - a directory or a socket is an error naming it.
func WriteFile(path string, perm fs.FileMode, write func(io.Writer) error) error {
	target, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing there, or a link to nothing: a link is followed to the file it will create.
		target, err = danglingTarget(path)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return replaceFile(path, target, perm, write)
	case err != nil:
		return fmt.Errorf("write %s: %w", path, err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return replaceFile(path, target, m.Perm(), write)
	case m&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe) != 0:
		return writeInPlace(path, write)
	case m.IsDir():
		return fmt.Errorf("write %s: it is a directory: name a file", path)
	default:
		return fmt.Errorf("write %s: it is a %v, not a file, device or FIFO", path, kind(m))
	}
}

// kind names the type of a mode that is neither a file, a directory, a device nor a FIFO.
func kind(m fs.FileMode) string {
	if m&fs.ModeSocket != 0 {
		return "socket"
	}
	return m.Type().String()
}

// danglingTarget is where a file written at path is created: path itself, or, where path is a
// symbolic link (or a chain of them) to a name that does not exist, that name.
func danglingTarget(path string) (string, error) {
	for range 40 { // Linux's own limit on links followed
		link, err := os.Readlink(path)
		if err != nil {
			return path, nil // not a link (or a parent is missing, which the create reports)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", errors.New("too many levels of symbolic links")
}

// replaceFile writes target (path, or the file path's links lead to) through a synced
// temporary file beside it, renamed over it.
func replaceFile(path, target string, perm fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*")
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: directory %s does not exist", path, dir)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing of that name to remove
	// CreateTemp makes the file readable by its owner only.
	if err := errors.Join(tmp.Chmod(perm), write(tmp), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeInPlace writes to the device or FIFO at path as it is: no create, no truncation.
func writeInPlace(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := errors.Join(write(f), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
