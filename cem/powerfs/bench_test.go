package powerfs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPowerLossStep measures what a power loss costs on each disk model: a server's
// writes between two power losses (a log appended in 200-byte records, fsynced every eighth
// record as a group commit does, and a 64 KiB snapshot rewritten and renamed into place) and
// then the power loss itself. Each iteration runs every model once, in turn, so the ratios it
// reports (each model's time over the byte tear's, the default until 2026-11-29) come from one
// run on one machine.
//
//	go test ./cem/powerfs -run '^$' -bench PowerLossStep -benchtime 50x   # as root
func BenchmarkPowerLossStep(b *testing.B) {
	models := []struct {
		name string
		disk Disk
	}{
		{"byte", byteTear},
		{"page", DefaultDisk},
		{"sector", Disk{Unit: Sector, Keeps: KeepPrefix, Names: NamesJournal}},
		{"page-subset", Disk{Unit: Page, Keeps: KeepSubset, Names: NamesJournal}},
	}
	fss := make([]*FS, len(models))
	for i, m := range models {
		fss[i] = mountT(b, m.disk)
	}
	spent := make([]time.Duration, len(models))
	record := bytes.Repeat([]byte("r"), 200)
	snapshot := bytes.Repeat([]byte("s"), 64<<10)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i, f := range fss {
			start := time.Now()
			if err := serverWrites(f.Dir(), record, snapshot); err != nil {
				b.Fatalf("%s: %v", models[i].name, err)
			}
			if _, err := f.Drop(context.Background(), uint64(n)); err != nil {
				b.Fatalf("%s: power loss: %v", models[i].name, err)
			}
			spent[i] += time.Since(start)
		}
	}
	b.StopTimer()
	for i, m := range models {
		b.ReportMetric(float64(spent[i].Microseconds())/float64(b.N), m.name+"-µs/step")
		if i > 0 {
			b.ReportMetric(float64(spent[i])/float64(spent[0]), m.name+"/byte")
		}
	}
}

// serverWrites is what a server writes between two power losses, as the benchmark's doc says.
func serverWrites(dir string, record, snapshot []byte) error {
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	for i := 1; i <= 64; i++ {
		if _, err := log.Write(record); err != nil {
			return err
		}
		if i%8 == 0 {
			if err := log.Sync(); err != nil {
				return err
			}
		}
	}
	tmp := filepath.Join(dir, "snapshot.tmp")
	if err := os.WriteFile(tmp, snapshot, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "snapshot"))
}
