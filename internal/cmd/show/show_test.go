package show

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/modulo-testing/modulo/internal/cmdutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRunGolden(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		ids    []string
		golden string
	}{
		{"all", "../../../schedules/testdata/qcz-1x3.sched", nil, "testdata/qcz-1x3.golden"},
		{"one", "../../../schedules/testdata/ssr-1x3.sched", []string{"9e00953181d87464"}, "testdata/ssr-one.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Run(&Options{Out: &out, File: tt.file, IDs: tt.ids}); err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(tt.golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tt.golden)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("output:\n%s\nwant (%s):\n%s", out.String(), tt.golden, want)
			}
		})
	}
}

func TestRunUnknownID(t *testing.T) {
	err := Run(&Options{Out: &bytes.Buffer{}, File: "../../../schedules/testdata/qcz-1x3.sched", IDs: []string{"0000000000000000"}})
	if err == nil || err.Error() != "../../../schedules/testdata/qcz-1x3.sched: no schedule with ID 0000000000000000" || cmdutil.Code(err) != 2 {
		t.Fatalf("error = %v (exit %d)", err, cmdutil.Code(err))
	}
}
