package schedules

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// BenchmarkGenerate measures `modulo gen` for Q/C/Z ops=5 replicas=3, the paper's largest run
// (172,997 schedules), written to io.Discard and to a file. The published Java generator took
// about 13 s for it on this kind of machine; the goal is under 0.5 s.
func BenchmarkGenerate(b *testing.B) {
	d, err := drms.Lookup("qcz")
	if err != nil {
		b.Fatal(err)
	}
	p := aem.Params{Ops: 5, Replicas: 3}
	b.Run("discard", func(b *testing.B) {
		for b.Loop() {
			n, err := Generate(io.Discard, d, p, "bench", 0)
			if err != nil || n != 172997 {
				b.Fatalf("Generate = %d, %v", n, err)
			}
		}
	})
	b.Run("file", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "qcz.sched")
		for b.Loop() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Generate(f, d, p, "bench", 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRead measures reading and validating the same file.
func BenchmarkRead(b *testing.B) {
	d, _ := drms.Lookup("qcz")
	path := filepath.Join(b.TempDir(), "qcz.sched")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Generate(f, d, aem.Params{Ops: 5, Replicas: 3}, "bench", 0); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for b.Loop() {
		if _, all, err := ReadAll(path); err != nil || len(all) != 172997 {
			b.Fatalf("ReadAll = %d schedules, %v", len(all), err)
		}
	}
}

// BenchmarkPartition measures what every shard of a campaign does before it runs: cut the
// file into 16 shards, for Q/C/Z ops=4 (13,381 schedules, in memory).
func BenchmarkPartition(b *testing.B) {
	d, err := drms.Lookup("qcz")
	if err != nil {
		b.Fatal(err)
	}
	p := aem.Params{Ops: 4, Replicas: 3}
	_, ss, err := Generated(d, p)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Partition(d.Model, p, Stream(ss), 16); err != nil {
			b.Fatal(err)
		}
	}
}
