package schedules

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// Sample writes the header and then n schedules of d with parameters p drawn uniformly at
// random, without repetition, from all of them, in canonical order: a subsequence of what
// Generate writes. The schedules are drawn by rank, which the state graph's path counts turn
// into a schedule without enumerating the others (aem.Graph.Unrank), so a sample can come
// from a space far too large to enumerate. The draw depends only on seed (a PCG generator),
// so one seed gives one sample on every machine. With n at least the number of schedules, it
// writes them all. The header's generator says it is a sample, of how many, with which seed.
func Sample(w io.Writer, d drms.DRM, p aem.Params, generator string, n, seed uint64) (uint64, error) {
	g, total, err := countedGraph(d, p)
	if err != nil {
		return 0, err
	}
	if n >= total {
		return generate(w, g, total, d, p, generator, 0)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	picked := make(map[uint64]bool, n)
	for uint64(len(picked)) < n {
		picked[rng.Uint64N(total)] = true
	}
	bw := bufio.NewWriterSize(w, 1<<18)
	h := Header{DRM: d, Params: p, Count: n,
		Generator: fmt.Sprintf("%s (a sample of %d of %d schedules, seed %d)", generator, n, total, seed)}
	if err := WriteHeader(bw, h); err != nil {
		return 0, err
	}
	v := &lineWriter{w: bw, limit: n + 1, idPrefix: idPrefix(d.Name, p)}
	for _, k := range slices.Sorted(maps.Keys(picked)) {
		path, err := g.Unrank(k)
		if err != nil {
			return v.written, err
		}
		for i := range path {
			v.Push(&path[i])
		}
		if err := v.Leaf(); err != nil {
			return v.written, err
		}
		for range path {
			v.Pop()
		}
	}
	return v.written, bw.Flush()
}
