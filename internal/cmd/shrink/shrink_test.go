package shrink

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/internal/cmdutil"
)

// campaign is a real campaign recorded in results/testdata (see its README).
const campaign = "../../../results/testdata/campaigns/slr-2x3-broken"

func TestNewCmd(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*Options) bool
	}{
		{"defaults", []string{"dir", "0123456789abcdef"}, func(o *Options) bool {
			return o.Dir == "dir" && o.ID == "0123456789abcdef" && o.Repeat == DefaultRepeat && o.MaxTries == DefaultMaxTries &&
				o.PluginDir == nil && o.Context != nil
		}},
		{"flags", []string{"dir", "id", "--repeat", "5", "--max-tries", "9", "--base-port", "30000"}, func(o *Options) bool {
			return o.Repeat == 5 && o.MaxTries == 9 && *o.BasePort == 30000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *Options
			cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}

// TestRunBadInput checks what is refused before any plugin starts.
func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"repeat 0", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", MaxTries: 1}, "--repeat must be at least 1, got 0"},
		{"max-tries 0", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 1}, "--max-tries must be at least 1, got 0"},
		{"a pass", Options{Dir: campaign, ID: "7c77ccb06bc366b1", Repeat: 1, MaxTries: 1},
			"schedule 7c77ccb06bc366b1's verdict is pass: only a fail or an incomplete is shrunk"},
		{"unknown ID", Options{Dir: campaign, ID: "ffffffffffffffff", Repeat: 1, MaxTries: 1}, campaign + ": no schedule ffffffffffffffff was recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out, tt.opts.ErrOut = &out, &out
			err := Run(&tt.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
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
}
