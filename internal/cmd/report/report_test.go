package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/internal/cmdutil"
)

// campaign is a real campaign recorded in results/testdata (see its README).
const campaign = "../../../results/testdata/campaigns/slr-2x3-broken"

func TestNewCmd(t *testing.T) {
	var got *Options
	cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"dir", "-o", "r.html"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Dir != "dir" || got.Output != "r.html" {
		t.Errorf("options %+v", got)
	}
}

func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	var out bytes.Buffer
	if err := Run(&Options{Out: &out, Dir: campaign, Output: path}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "wrote "+path+"\n" {
		t.Errorf("output %q", out.String())
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), `id="f-0b98d909dcdb6ee8"`) || fi.Mode().Perm() != 0o644 {
		t.Errorf("report of %d bytes, mode %v, does not look like the campaign's", len(page), fi.Mode())
	}

	out.Reset()
	if err := Run(&Options{Out: &out, Dir: campaign, Output: "-"}); err != nil {
		t.Fatal(err)
	}
	if len(out.Bytes()) != len(page) {
		t.Errorf("to standard output: %d bytes, to a file %d", out.Len(), len(page))
	}
}

func TestRunBadInput(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no output", Options{Dir: campaign}, "-o FILE is required: where to write the report (- for standard output)"},
		{"not a campaign", Options{Dir: empty, Output: "-"}, empty + ": not a campaign's results directory: no campaign.json in it or in its directories"},
		{"several campaigns", Options{Dir: filepath.Dir(campaign), Output: "-"}, filepath.Dir(campaign) + " holds 4 campaigns (" +
			filepath.Join(filepath.Dir(campaign), "mdl-1x2") + ", " + filepath.Join(filepath.Dir(campaign), "qpn-course-1x5") + ", " +
			filepath.Join(filepath.Dir(campaign), "slr-1x3") + ", " + campaign + "): name one; a report is of one campaign"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out = &out
			err := Run(&tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v\nwant    %s", err, tt.want)
			}
			if code := cmdutil.Code(err); code != cmdutil.ExitUsage {
				t.Errorf("exit status %d, want %d", code, cmdutil.ExitUsage)
			}
			if out.Len() != 0 {
				t.Errorf("output %q", out.String())
			}
		})
	}
	// A directory that cannot be written leaves nothing behind and names the file.
	err := Run(&Options{Out: &bytes.Buffer{}, Dir: campaign, Output: filepath.Join(empty, "no", "such", "r.html")})
	if err == nil || !strings.HasPrefix(err.Error(), "report: write "+filepath.Join(empty, "no", "such", "r.html")+": directory ") {
		t.Errorf("error = %v", err)
	}
}
