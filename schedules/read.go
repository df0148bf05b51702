package schedules

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// FileError is a problem at one line of a schedule file; it prints as FILE:LINE: what.
type FileError struct {
	File string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// maxLine bounds a schedule line; the longest schedules of any model here are far shorter.
const maxLine = 1 << 20

// Reader streams and validates a schedule file: the header, every line's syntax, that every
// transition was enabled where it stands, that every schedule ends where the model ends, that
// every ID matches its schedule and is unique, and that the file holds as many schedules as its
// header says.
type Reader struct {
	Header Header
	name   string
	sc     *bufio.Scanner
	line   int
	read   uint64
	graph  *aem.Graph
	seen   map[string]int
}

// Open opens and reads the header of the schedule file at path. Close the returned file when
// done.
func Open(path string) (*Reader, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open schedule file: %w", err)
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
}

// NewReader reads the header from r; name is used in messages.
func NewReader(r io.Reader, name string) (*Reader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	rd := &Reader{name: name, sc: sc, seen: map[string]int{}}
	if err := rd.readHeader(); err != nil {
		return nil, err
	}
	g, err := aem.NewGraph(rd.Header.DRM.Model, rd.Header.Params)
	if err != nil {
		return nil, rd.errorf(0, "%w", err)
	}
	rd.graph = g
	return rd, nil
}

func (r *Reader) errorf(line int, format string, args ...any) error {
	return &FileError{File: r.name, Line: line, Err: fmt.Errorf(format, args...)}
}

func (r *Reader) scan() (string, bool, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return "", false, r.errorf(r.line+1, "line longer than %d bytes", maxLine)
			}
			return "", false, r.errorf(r.line, "read: %w", err)
		}
		return "", false, nil
	}
	r.line++
	return r.sc.Text(), true, nil
}

var headerKeys = []string{"drm", "ops", "replicas", "generator", "schedules"}

func (r *Reader) readHeader() error {
	first, ok, err := r.scan()
	if err != nil {
		return err
	}
	if !ok {
		return r.errorf(0, "empty file, not a schedule file")
	}
	if first != Magic {
		return r.errorf(1, "not a modulo schedule file (first line must be %q)", Magic)
	}
	vals := map[string]string{}
	for _, key := range headerKeys {
		text, ok, err := r.scan()
		if err != nil {
			return err
		}
		if !ok {
			return r.errorf(r.line, "header ends early: missing %q", key)
		}
		k, v, found := strings.Cut(strings.TrimPrefix(text, "# "), ": ")
		if !strings.HasPrefix(text, "# ") || !found || k != key {
			return r.errorf(r.line, "header line must be \"# %s: ...\", got %q", key, text)
		}
		vals[k] = v
	}
	h := &r.Header
	h.DRM, err = drms.Lookup(vals["drm"])
	if err != nil {
		return r.errorf(2, "%w", err)
	}
	nums := []struct {
		key  string
		line int
		dst  *int
	}{{"ops", 3, &h.Params.Ops}, {"replicas", 4, &h.Params.Replicas}}
	for _, n := range nums {
		if *n.dst, err = strconv.Atoi(vals[n.key]); err != nil {
			return r.errorf(n.line, "%s: %q is not a number", n.key, vals[n.key])
		}
	}
	if err := h.Params.Validate(); err != nil {
		return r.errorf(3, "%w", err)
	}
	h.Generator = vals["generator"]
	if h.Count, err = strconv.ParseUint(vals["schedules"], 10, 64); err != nil {
		return r.errorf(6, "schedules: %q is not a count", vals["schedules"])
	}
	return nil
}

// Next returns the next schedule, or io.EOF after the last one once the file proved complete.
func (r *Reader) Next() (Schedule, error) {
	text, ok, err := r.scan()
	if err != nil {
		return Schedule{}, err
	}
	if !ok {
		if r.read != r.Header.Count {
			return Schedule{}, r.errorf(r.line, "file ends after %d schedules, header says %d (truncated?)", r.read, r.Header.Count)
		}
		return Schedule{}, io.EOF
	}
	if r.read == r.Header.Count {
		return Schedule{}, r.errorf(r.line, "more schedules than the header's %d", r.Header.Count)
	}
	s, err := r.parse(text)
	if err != nil {
		return Schedule{}, &FileError{File: r.name, Line: r.line, Err: err}
	}
	r.read++
	return s, nil
}

func (r *Reader) parse(text string) (Schedule, error) {
	s := Schedule{Line: r.line}
	id, body, ok := strings.Cut(text, " ")
	if !ok || body == "" {
		return s, errors.New("a schedule line is an ID, a space and the transitions")
	}
	if len(id) != IDLen || strings.Trim(id, "0123456789abcdef") != "" {
		return s, fmt.Errorf("ID %q is not %d lowercase hex digits", id, IDLen)
	}
	steps, err := ParseBody(body)
	if err != nil {
		return s, err
	}
	s.Steps = steps
	if canon := string(Body(s.Steps)); canon != body {
		return s, fmt.Errorf("transitions not in canonical form: want %q", canon)
	}
	if _, err := r.graph.Follow(s.Steps); err != nil {
		return s, fmt.Errorf("not a %s schedule: %w", r.Header.DRM.Title, err)
	}
	if want := ID(r.Header.DRM.Name, r.Header.Params, []byte(body)); id != want {
		return s, fmt.Errorf("ID %s does not match the schedule (its ID is %s): edited by hand?", id, want)
	}
	if prev, dup := r.seen[id]; dup {
		return s, fmt.Errorf("schedule %s repeats line %d", id, prev)
	}
	r.seen[id] = r.line
	s.ID = id
	return s, nil
}

// Validate reads the whole file at path, holding no schedule, and returns the first problem:
// a malformed line, a schedule whose ID does not match its steps, a count that is not the
// header's. A campaign runs it before its first schedule, so that a file truncated at its end
// is refused at once rather than after hours of running what comes before.
func Validate(path string) error {
	r, f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// ReadAll reads every schedule of the file at path.
func ReadAll(path string) (Header, []Schedule, error) {
	r, f, err := Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	return r.readAll()
}

// Generated returns every schedule of d for p, in file order, as the file Generate writes holds
// them: for tests and benchmarks that need a campaign's schedules in memory.
func Generated(d drms.DRM, p aem.Params) (Header, []Schedule, error) {
	var b bytes.Buffer
	if _, err := Generate(&b, d, p, "modulo", 0); err != nil {
		return Header{}, nil, err
	}
	r, err := NewReader(&b, d.Name+" generated")
	if err != nil {
		return Header{}, nil, err
	}
	return r.readAll()
}

// readAll reads the schedules left.
func (r *Reader) readAll() (Header, []Schedule, error) {
	var all []Schedule
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header, all, nil
		}
		if err != nil {
			return r.Header, all, err
		}
		all = append(all, s)
	}
}
