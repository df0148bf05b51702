package schedules

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// WriteHeader writes a file's header.
func WriteHeader(w io.Writer, h Header) error {
	_, err := fmt.Fprintf(w, "%s\n# drm: %s\n# ops: %d\n# replicas: %d\n# generator: %s\n# schedules: %d\n",
		Magic, h.DRM.Name, h.Params.Ops, h.Params.Replicas, h.Generator, h.Count)
	return err
}

// Generate writes the header and then the first limit schedules of d with parameters p
// (every schedule when limit is 0) in canonical order. It returns how many it wrote.
func Generate(w io.Writer, d drms.DRM, p aem.Params, generator string, limit uint64) (uint64, error) {
	g, total, err := countedGraph(d, p)
	if err != nil {
		return 0, err
	}
	return generate(w, g, total, d, p, generator, limit)
}

// countedGraph is d's state graph for p, its schedules counted.
func countedGraph(d drms.DRM, p aem.Params) (*aem.Graph, uint64, error) {
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		return nil, 0, err
	}
	total, err := g.Count()
	return g, total, err
}

// generate is Generate on g, whose schedules number total.
func generate(w io.Writer, g *aem.Graph, total uint64, d drms.DRM, p aem.Params, generator string, limit uint64) (uint64, error) {
	n := total
	if limit > 0 && limit < n {
		n = limit
	}
	bw := bufio.NewWriterSize(w, 1<<18)
	if err := WriteHeader(bw, Header{DRM: d, Params: p, Generator: generator, Count: n}); err != nil {
		return 0, err
	}
	v := &lineWriter{w: bw, limit: n, idPrefix: idPrefix(d.Name, p)}
	if n > 0 {
		if err := g.Walk(v); err != nil {
			return v.written, err
		}
	}
	if err := bw.Flush(); err != nil {
		return v.written, err
	}
	return v.written, nil
}

// idPrefix is what ID hashes before a schedule's body.
func idPrefix(drm string, p aem.Params) []byte {
	b := append([]byte(drm), 0)
	b = strconv.AppendInt(b, int64(p.Ops), 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(p.Replicas), 10)
	return append(b, 0)
}

// lineWriter renders a walk's schedules as lines. Each transition's text is rendered once per
// graph edge, and each line is built by appending and truncating one buffer, so the cost per
// schedule is its hash and its bytes.
type lineWriter struct {
	w        *bufio.Writer
	limit    uint64
	written  uint64
	idPrefix []byte
	tokens   [][]byte
	body     []byte
	marks    []int
	hashBuf  []byte
	line     []byte
}

func (v *lineWriter) Push(e *aem.Edge) {
	for e.ID >= len(v.tokens) {
		v.tokens = append(v.tokens, nil)
	}
	if v.tokens[e.ID] == nil {
		v.tokens[e.ID] = e.T.AppendText(nil)
	}
	v.marks = append(v.marks, len(v.body))
	if len(v.body) > 0 {
		v.body = append(v.body, ' ')
	}
	v.body = append(v.body, v.tokens[e.ID]...)
}

func (v *lineWriter) Pop() {
	v.body = v.body[:v.marks[len(v.marks)-1]]
	v.marks = v.marks[:len(v.marks)-1]
}

func (v *lineWriter) Leaf() error {
	v.hashBuf = append(append(v.hashBuf[:0], v.idPrefix...), v.body...)
	sum := sha256.Sum256(v.hashBuf)
	v.line = hex.AppendEncode(v.line[:0], sum[:IDLen/2])
	v.line = append(v.line, ' ')
	v.line = append(v.line, v.body...)
	v.line = append(v.line, '\n')
	if _, err := v.w.Write(v.line); err != nil {
		return err
	}
	v.written++
	if v.written >= v.limit {
		return aem.ErrStop
	}
	return nil
}
