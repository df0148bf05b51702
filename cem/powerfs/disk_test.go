package powerfs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseDisk: the settings' words make a model; a word of none, and a subset of bytes, are
// refused naming what is allowed.
func TestParseDisk(t *testing.T) {
	for _, tt := range []struct {
		unit, keeps, names string
		want               Disk
		err                string
	}{
		{"", "", "", Disk{Page, KeepPrefix, NamesJournal}, ""},
		{"page", "subset", "strict", Disk{Page, KeepSubset, NamesStrict}, ""},
		{"sector", "prefix", "journal", Disk{Sector, KeepPrefix, NamesJournal}, ""},
		{"byte", "none", "", Disk{Byte, KeepNone, NamesJournal}, ""},
		{"block", "", "", Disk{}, `disk unit must be "page", "sector" or "byte", got "block"`},
		{"", "most", "", Disk{}, `disk keeps must be "none", "prefix" or "subset", got "most"`},
		{"", "", "posix", Disk{}, `disk names must be "journal" or "strict", got "posix"`},
		{"byte", "subset", "", Disk{}, `no subset of bytes`},
	} {
		got, err := ParseDisk(tt.unit, tt.keeps, tt.names)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseDisk(%q, %q, %q) = %+v, %v; want %+v, %q", tt.unit, tt.keeps, tt.names, got, err, tt.want, tt.err)
		}
	}
}

// TestUnitsKept: a power loss keeps whole units of a file's unsynced data, each holding what
// was last written to it, never a part of one: none of them, a prefix of them in the order
// first written, or any subset, as the seed draws, and one seed draws the same again.
func TestUnitsKept(t *testing.T) {
	for _, unit := range []int64{Page, Sector} {
		for _, keeps := range []Keeps{KeepNone, KeepPrefix, KeepSubset} {
			t.Run(fmt.Sprintf("%d %s", unit, keeps), func(t *testing.T) {
				d := Disk{Unit: unit, Keeps: keeps, Names: NamesJournal}
				sets := map[string]bool{}
				for seed := range uint64(12) {
					kept, again := unitsKept(t, d, seed), unitsKept(t, d, seed)
					if !slices.Equal(kept, again) {
						t.Fatalf("seed %d kept units %v, then %v", seed, kept, again)
					}
					sets[fmt.Sprint(kept)] = true
					switch keeps {
					case KeepNone:
						if len(kept) > 0 {
							t.Errorf("seed %d kept units %v, want none", seed, kept)
						}
					case KeepPrefix:
						if !slices.Equal(kept, unitOrder[:len(kept)]) {
							t.Errorf("seed %d kept units %v, want a prefix of %v", seed, kept, unitOrder)
						}
					}
				}
				if keeps != KeepNone && len(sets) < 3 {
					t.Errorf("12 seeds kept %d sets of units, want several: %v", len(sets), sets)
				}
			})
		}
	}
}

// unitOrder is the order in which unitsKept's writes first touch the file's units.
var unitOrder = []int{1, 3, 4, 0}

// unitsKept makes a file of three synced units, dirties units 1, 3, 4 and 0 in that order (a
// few bytes into unit 1, two whole units appended, a byte of unit 0), drops with seed, checks
// that every unit holds its durable or its last contents whole, and returns the units kept, in
// unitOrder's order.
func unitsKept(t *testing.T, d Disk, seed uint64) []int {
	t.Helper()
	f := mountT(t, d)
	u := int(d.Unit)
	path := filepath.Join(f.Dir(), "data")
	write(t, path, strings.Repeat("a", 3*u), true)
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		off  int
		data string
	}{{u + 10, "bbbb"}, {3 * u, strings.Repeat("c", 2*u)}, {5, "d"}} {
		if _, err := file.WriteAt([]byte(w.data), int64(w.off)); err != nil {
			t.Fatal(err)
		}
	}
	file.Close()
	last, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Drop(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	durable := []byte(strings.Repeat("a", 3*u))
	unitOf := func(b []byte, i int) []byte {
		if i*u >= len(b) {
			return nil
		}
		return b[i*u : min((i+1)*u, len(b))]
	}
	var kept []int
	for _, i := range unitOrder {
		g, l, was := unitOf(got, i), unitOf(last, i), unitOf(durable, i)
		zeros := make([]byte, u) // a unit past the durable size that was lost, below one kept
		switch {
		case bytes.Equal(g, l):
			kept = append(kept, i)
		case bytes.Equal(g, was), was == nil && (g == nil || bytes.Equal(g, zeros)):
		default:
			t.Fatalf("seed %d: unit %d holds %.12q..., neither its durable nor its last contents whole", seed, i, g)
		}
	}
	return kept
}

// TestNames: with journal names an fsync of a new file makes its name durable, as ext4 and XFS
// do; with strict names only an fsync of its directory does, as POSIX promises, and a
// directory's own name needs its parent's fsync.
func TestNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		do   func(t *testing.T, root string)
		// what each rule leaves, by path relative to the root ("/" a directory, absent missing)
		journal, strict map[string]string
	}{
		{"a new file fsynced", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "f"), "x", true)
		}, map[string]string{"f": "x"}, map[string]string{"f": absent}},
		{"a new file and its directory fsynced", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "f"), "x", true)
			syncDir(t, root)
		}, map[string]string{"f": "x"}, map[string]string{"f": "x"}},
		{"a rename after the file's fsync", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "tmp"), "x", true)
			if err := os.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "final")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"tmp": "x", "final": absent}, map[string]string{"tmp": absent, "final": absent}},
		{"a new directory whose parent was never fsynced", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "snap"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, "snap", "s"), "x", true)
			syncDir(t, filepath.Join(root, "snap"))
		}, map[string]string{"snap": "/", filepath.Join("snap", "s"): "x"}, map[string]string{"snap": absent, filepath.Join("snap", "s"): absent}},
		{"a remove, its directory fsynced", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "old")); err != nil {
				t.Fatal(err)
			}
			syncDir(t, root)
		}, map[string]string{"old": absent}, map[string]string{"old": absent}},
		{"a remove, another directory fsynced", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "old")); err != nil {
				t.Fatal(err)
			}
			syncDir(t, filepath.Join(root, "other"))
		}, map[string]string{"old": absent}, map[string]string{"old": "old"}},
	} {
		for _, names := range []Names{NamesJournal, NamesStrict} {
			t.Run(tt.name+" "+string(names), func(t *testing.T) {
				f := mountT(t, Disk{Unit: Byte, Keeps: KeepNone, Names: names})
				write(t, filepath.Join(f.Dir(), "old"), "old", true)
				if err := os.Mkdir(filepath.Join(f.Dir(), "other"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				tt.do(t, f.Dir())
				if _, err := f.Drop(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				want := tt.journal
				if names == NamesStrict {
					want = tt.strict
				}
				got := contents(t, f.Dir())
				for path, w := range want {
					g, ok := got[path]
					if !ok {
						g = absent
					}
					if g != w {
						t.Errorf("after the drop, %s holds %q, want %q (the mount holds %v)", path, g, w, got)
					}
				}
			})
		}
	}
}

// TestLossNamesUndone: a power loss's record names the name operations it undid, in the order
// they were made, and says how many more past the first maxUndoneShown.
func TestLossNamesUndone(t *testing.T) {
	l := Loss{Undone: []string{"create a", "rename a.tmp to b"}}
	if got, want := l.String(), "dropped 0 unsynced bytes of 0 files and undid 2 name operations (create a, rename a.tmp to b)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	var many Loss
	for i := range maxUndoneShown + 3 {
		many.Undone = append(many.Undone, fmt.Sprintf("create f%d", i))
	}
	if got := many.String(); !strings.HasSuffix(got, "create f19 and 3 more)") {
		t.Errorf("%q names more than %d", got, maxUndoneShown)
	}
}

// TestByteRanges: kept units are named as byte ranges, adjacent ones merged.
func TestByteRanges(t *testing.T) {
	unit := func(off, n int64) segment { return segment{off: off, data: make([]byte, n)} }
	for _, tt := range []struct {
		segs []segment
		want string
	}{
		{[]segment{unit(0, 4096)}, "0-4095"},
		{[]segment{unit(0, 4096), unit(4096, 4096), unit(8192, 100)}, "0-8291"},
		{[]segment{unit(0, 4096), unit(8192, 4096)}, "0-4095, 8192-12287"},
		{[]segment{unit(512, 512), unit(1024, 512), unit(4096, 512)}, "512-1535, 4096-4607"},
	} {
		if got := byteRanges(tt.segs); got != tt.want {
			t.Errorf("byteRanges(%v) = %q, want %q", tt.segs, got, tt.want)
		}
	}
}
