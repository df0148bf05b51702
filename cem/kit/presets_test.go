package kit_test

import (
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/cem/kit"
)

// TestPresetsSection: the section's own keys lie over its preset's for the DRM, which lie over
// the defaults; a preset unknown, or without settings for the DRM, is an error naming it.
func TestPresetsSection(t *testing.T) {
	type section struct {
		Preset string `toml:"preset"`
		A, B   int
	}
	presets := kit.Presets{"fast": {"qcz": "a = 10\nb = 20\n"}, "slow": {"qcz": "a = 1\n"}}
	tests := []struct {
		name, toml, drm string
		want            section
		wantErr         string
	}{
		{name: "no preset", toml: "b = 3", drm: "qcz", want: section{A: 7, B: 3}},
		{name: "preset", toml: `preset = "fast"`, drm: "qcz", want: section{Preset: "fast", A: 10, B: 20}},
		{name: "section over preset", toml: "preset = \"fast\"\nb = 3", drm: "qcz", want: section{Preset: "fast", A: 10, B: 3}},
		{name: "preset over defaults", toml: `preset = "slow"`, drm: "qcz", want: section{Preset: "slow", A: 1, B: 8}},
		{name: "no DRM yet", toml: `preset = "fast"`, drm: "", want: section{Preset: "fast", A: 7, B: 8}},
		{name: "unknown", toml: `preset = "x"`, drm: "qcz", wantErr: `unknown preset "x" (presets: fast, slow)`},
		{name: "other DRM", toml: `preset = "fast"`, drm: "ssr", wantErr: `preset "fast" has no settings for DRM ssr`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s section
			decode := func(v any) error { _, err := toml.Decode(tt.toml, v); return err }
			err := presets.Section(decode, tt.drm, &s, func() { s = section{A: 7, B: 8} }, func() string { return s.Preset })
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || s != tt.want {
				t.Fatalf("got %+v, %v; want %+v", s, err, tt.want)
			}
		})
	}
}
