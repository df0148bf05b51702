package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/results"
)

// campaigns holds the real campaigns recorded in results/testdata (see its README).
const campaigns = "../../../results/testdata/campaigns"

func TestNewCmd(t *testing.T) {
	tests := []struct {
		args        []string
		dir, format string
	}{
		{nil, "modulo-results", "text"},
		{[]string{"some/dir"}, "some/dir", "text"},
		{[]string{"--format", "junit", "some/dir"}, "some/dir", "junit"},
	}
	for _, tt := range tests {
		var got *Options
		cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Dir != tt.dir || got.Format != tt.format {
			t.Errorf("args %q: dir %q, format %q; want %q, %q", tt.args, got.Dir, got.Format, tt.dir, tt.format)
		}
	}
}

// TestBadFormat runs the command with a format it does not know: a usage error, one line,
// before it reads anything.
func TestBadFormat(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCmd(&out, nil)
	cmd.SetArgs([]string{"--format", "bogus", filepath.Join(t.TempDir(), "nope")})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	want := `--format must be text, json or junit, got "bogus"`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	if code := cmdutil.Code(err); code != cmdutil.ExitUsage {
		t.Errorf("exit status %d, want %d", code, cmdutil.ExitUsage)
	}
	if out.Len() > 0 {
		t.Errorf("printed %q", out.String())
	}
}

// TestRun summarises one recorded campaign, and a directory of them.
func TestRun(t *testing.T) {
	one := filepath.Join(campaigns, "slr-2x3-broken")
	s, err := results.ReadSummary(one)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := s.WriteText(&want); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(&Options{Out: &out, Dir: one}); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want.String())
	}
	// Every non-pass is one line that starts with its ID and names its label.
	for _, r := range s.NotPassed() {
		if n := strings.Count(out.String(), "\n"+r.ID+"  "+s.Label(r)+" "); n != 1 {
			t.Errorf("%d lines start with %s and its label %s", n, r.ID, s.Label(r))
		}
	}

	out.Reset()
	if err := Run(&Options{Out: &out, Dir: campaigns}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slr-1x3", "slr-2x3-broken"} {
		if !strings.Contains(out.String(), "campaign  "+filepath.Join(campaigns, name)+"\n") {
			t.Errorf("no summary of %s in:\n%s", name, out.String())
		}
	}
}

func TestRunBadInput(t *testing.T) {
	empty := t.TempDir()
	notJSON := t.TempDir()
	if err := os.WriteFile(filepath.Join(notJSON, results.CampaignFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
		reproduce       int
		code            int
	}{
		{"missing", filepath.Join(empty, "nope"), filepath.Join(empty, "nope") + ": no such directory", 0, cmdutil.ExitUsage},
		{"no campaign", empty, empty + ": not a campaign's results directory: no campaign.json in it or in its directories", 0, cmdutil.ExitUsage},
		{"bad campaign.json", notJSON, filepath.Join(notJSON, results.CampaignFile) + ": unexpected end of JSON input", 0, cmdutil.ExitUsage},
		{"reproduce below 0", filepath.Join(campaigns, "slr-1x3"), "--reproduce must be at least 1 (or 0: do not replay), got -1", -1, cmdutil.ExitUsage},
		{"reproduce several campaigns", campaigns, "--reproduce replays the groups of one campaign, and " + campaigns + " holds 4: name one", 2, cmdutil.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(&Options{Out: &out, Dir: tt.dir, Reproduce: tt.reproduce})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v\nwant    %s", err, tt.want)
			}
			if code := cmdutil.Code(err); code != tt.code {
				t.Errorf("exit status %d, want %d", code, tt.code)
			}
		})
	}
}
