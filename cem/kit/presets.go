package kit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Presets are a plugin's named settings, per DRM, each the TOML of the plugin's own section
// (modulo run --preset NAME sets the section's preset key). A section's own keys override its
// preset's: decode the preset into the section's defaults with Decode, then the section again
// over it.
type Presets map[string]map[string]string

// Presetter is implemented by a system whose presets may also set the kit's own keys
// (workload, say): the kit applies the settings of the section's preset to its own keys as the
// system does to its own, the section's keys winning.
type Presetter interface {
	Presets() Presets
}

// Decode decodes preset name's settings for drm into v. An unknown preset, or one without
// settings for drm, is an error naming it; with drm empty (a configuration only being
// checked, its DRM not known yet) only the name is checked.
func (ps Presets) Decode(name, drm string, v any) error {
	byDRM, ok := ps[name]
	if !ok {
		names := make([]string, 0, len(ps))
		for n := range ps {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("unknown preset %q (presets: %s)", name, strings.Join(names, ", "))
	}
	if drm == "" {
		return nil
	}
	settings, ok := byDRM[drm]
	if !ok {
		return fmt.Errorf("preset %q has no settings for DRM %s", name, drm)
	}
	if _, err := toml.Decode(settings, v); err != nil {
		return fmt.Errorf("preset %s for %s: %w", name, drm, err)
	}
	return nil
}

// Section decodes a plugin's section into v (decode is the kit's, given to Configure), over
// the settings of the preset the section names for drm: reset sets v to the section's
// defaults, and preset returns the preset's name as decoded into v.
func (ps Presets) Section(decode func(any) error, drm string, v any, reset func(), preset func() string) error {
	reset()
	if err := decode(v); err != nil {
		return err
	}
	name := preset()
	if name == "" {
		return nil
	}
	// The preset first, then the section again over it: the section's keys win.
	reset()
	if err := ps.Decode(name, drm, v); err != nil {
		return err
	}
	return decode(v)
}
