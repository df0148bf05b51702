package powerfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFailingDisk: a failing disk refuses what its Errors name once From bytes are written,
// does nothing of what it refuses, counts it, and stops failing when healed.
func TestFailingDisk(t *testing.T) {
	for _, tt := range []struct {
		errs             Errors
		writeErr, twoErr bool   // the first 4-byte write, the second
		syncErr, readErr bool   // the fsync after them, a read of another file
		durable          string // the log after a power loss that follows the heal
		failed           Failed
		spend            bool  // Spend after the first write
		left             int64 // what Spend says was left of From
	}{
		{Errors{Writes: true, Fsyncs: true}, true, true, true, false, "head", Failed{Writes: 2, Fsyncs: 1, First: "write of 4 bytes at 4 of log"}, false, 0},
		{Errors{Writes: true, Fsyncs: true, From: 6}, false, true, true, false, "head", Failed{Writes: 1, Fsyncs: 1, First: "write of 4 bytes at 8 of log"}, false, 0},
		{Errors{Fsyncs: true}, false, false, true, false, "head", Failed{Fsyncs: 1, First: "fsync of log"}, false, 0},
		{Errors{Fsyncs: true, From: 100}, false, false, false, false, "headabcdabcd", Failed{}, false, 0},
		{Errors{Fsyncs: true, Reads: true}, false, false, true, true, "head", Failed{Fsyncs: 1, Reads: 1, First: "fsync of log"}, false, 0},
		// Spent after the first write, the disk fails the second, whatever From had left.
		{Errors{Writes: true, Fsyncs: true, From: 100}, false, true, true, false, "head", Failed{Writes: 1, Fsyncs: 1, First: "write of 4 bytes at 8 of log"}, true, 96},
		{Errors{Writes: true, Fsyncs: true}, true, true, true, false, "head", Failed{Writes: 2, Fsyncs: 1, First: "write of 4 bytes at 4 of log"}, true, 0},
	} {
		t.Run(tt.errs.String(), func(t *testing.T) {
			f := mountT(t, dropAll)
			path := filepath.Join(f.Dir(), "log")
			write(t, path, "head", true)
			write(t, filepath.Join(f.Dir(), "other"), "other", true)
			file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			f.Fail(tt.errs)
			isEIO := func(what string, err error, want bool) {
				t.Helper()
				if got := errors.Is(err, syscall.EIO); got != want || !got && err != nil {
					t.Errorf("%s: %v, want EIO %v", what, err, want)
				}
			}
			_, err = file.WriteString("abcd")
			isEIO("first write", err, tt.writeErr)
			if tt.spend {
				if left := f.Spend(); left != tt.left {
					t.Errorf("Spend() = %d, want %d", left, tt.left)
				}
			}
			_, err = file.WriteString("abcd")
			isEIO("second write", err, tt.twoErr)
			isEIO("fsync", file.Sync(), tt.syncErr)
			_, err = os.ReadFile(filepath.Join(f.Dir(), "other"))
			isEIO("read", err, tt.readErr)
			file.Close()
			// The kernel may ask for a read more than once (it reads ahead).
			if got := f.Heal(); got.Writes != tt.failed.Writes || got.Fsyncs != tt.failed.Fsyncs || (got.Reads > 0) != (tt.failed.Reads > 0) || got.First != tt.failed.First {
				t.Errorf("Heal() = %+v, want %+v", got, tt.failed)
			}
			if _, err := f.Drop(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			if got := contents(t, f.Dir())["log"]; got != tt.durable {
				t.Errorf("after a power loss the log holds %q, want %q: a refused fsync makes nothing durable", got, tt.durable)
			}
		})
	}
}

// TestDrawErrors: a seed draws one failing disk, and seeds draw every way.
func TestDrawErrors(t *testing.T) {
	if DrawErrors(5, false) != DrawErrors(5, false) {
		t.Error("one seed drew two disks")
	}
	seen := map[string]bool{}
	for seed := range uint64(64) {
		e := DrawErrors(seed, true)
		if !e.Fsyncs || !e.Reads || e.From < 0 || e.From >= 2<<10 {
			t.Errorf("seed %d drew %+v: fsyncs and reads must fail, from a byte below 2 KiB", seed, e)
		}
		seen[fmt.Sprint(e.Writes, e.From == 0)] = true
	}
	if len(seen) != 4 {
		t.Errorf("64 seeds drew %d of the 4 ways (writes or not, from 0 or later): %v", len(seen), seen)
	}
}

// TestCorruptIsSeeded: one seed corrupts one file one way, every byte but what the record
// says left as it was; seeds draw flips and truncations, in the last write's bytes and
// anywhere.
func TestCorruptIsSeeded(t *testing.T) {
	files := map[string]string{"a/log.1": strings.Repeat("x", 300), "a/log.2": strings.Repeat("y", 200) + "tail", "snap": "zzzz"}
	run := func(seed uint64) (map[string]string, Corruption) {
		f := mountT(t, dropAll)
		if err := os.Mkdir(filepath.Join(f.Dir(), "a"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"snap", "a/log.1", "a/log.2"} {
			write(t, filepath.Join(f.Dir(), name), strings.TrimSuffix(files[name], "tail"), false)
		}
		log, err := os.OpenFile(filepath.Join(f.Dir(), "a/log.2"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.WriteString("tail"); err != nil { // the last write: bytes 200-203
			t.Fatal(err)
		}
		log.Close()
		c, err := f.Corrupt(context.Background(), seed)
		if err != nil {
			t.Fatal(err)
		}
		return contents(t, f.Dir()), c
	}
	first, c := run(3)
	again, c2 := run(3)
	if c != c2 || fmt.Sprint(first) != fmt.Sprint(again) {
		t.Errorf("one seed corrupted two ways: %v and %v", c, c2)
	}
	seen := map[string]bool{}
	for seed := range uint64(24) {
		got, c := run(seed)
		var changed []string
		for name, want := range files {
			if got[name] != want {
				changed = append(changed, name)
			}
		}
		if len(changed) != 1 || changed[0] != c.File || c.Size != int64(len(files[c.File])) {
			t.Fatalf("seed %d: %v changed %v", seed, c, changed)
		}
		now, was := got[c.File], files[c.File]
		var at, bit, size int
		_, flipErr := fmt.Sscanf(c.What, "flipped bit %d of byte %d", &bit, &at)
		_, cutErr := fmt.Sscanf(c.What, "truncated to %d bytes", &size)
		switch {
		case flipErr == nil:
			if len(now) != len(was) || now[at] != was[at]^(1<<bit) || now[:at]+now[at+1:] != was[:at]+was[at+1:] {
				t.Errorf("seed %d: %v, but the file went from %q to %q", seed, c, was, now)
			}
		case cutErr == nil:
			if now != was[:size] {
				t.Errorf("seed %d: %v, but the file holds %d bytes", seed, c, len(now))
			}
		default:
			t.Errorf("seed %d: %v", seed, c)
		}
		if c.Last && (c.File != "a/log.2" || max(at, size) < 200) {
			t.Errorf("seed %d: %v, but the last write was bytes 200-203 of a/log.2", seed, c)
		}
		seen[fmt.Sprint(c.Last, strings.Fields(c.What)[0])] = true
	}
	if len(seen) != 4 {
		t.Errorf("24 seeds corrupted %d of the 4 ways (last or not, flip or truncation): %v", len(seen), seen)
	}
}
