package results

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// DRMOf returns the campaign's DRM: as campaign.json declares it for a DRM of a plugin's own,
// with no plugin needed, else from the catalogue.
func (c Campaign) DRMOf() (drms.DRM, error) {
	if c.Declared != nil {
		base, added, err := drms.SplitName(c.DRM)
		if err != nil {
			return drms.DRM{}, err
		}
		spec := *c.Declared
		spec.Name = base
		d, err := spec.DRM(c.Plugin)
		if err != nil {
			return d, err
		}
		return drms.Compose(d, added)
	}
	return drms.Lookup(c.DRM)
}

// Header returns the header of the campaign's schedules: its DRM and parameters.
func (c Campaign) Header() (schedules.Header, error) {
	d, err := c.DRMOf()
	if err != nil {
		return schedules.Header{}, fmt.Errorf("campaign: %w", err)
	}
	h := schedules.Header{DRM: d, Params: aem.Params{Ops: c.Ops, Replicas: c.Replicas}, Count: c.Schedules}
	if err := h.Params.Validate(); err != nil {
		return schedules.Header{}, fmt.Errorf("campaign: %w", err)
	}
	return h, nil
}

// FindSchedules returns the schedules of campaign c with the given IDs, found by enumerating
// the model's schedules again: an ID is a hash of the DRM, the parameters and the
// transitions, so the campaign's schedule file is not needed. IDs that are not schedules of
// the model are absent from the result.
func FindSchedules(c Campaign, ids map[string]bool) (map[string]schedules.Schedule, error) {
	h, err := c.Header()
	if err != nil {
		return nil, err
	}
	found := map[string]schedules.Schedule{}
	if len(ids) == 0 {
		return found, nil
	}
	fw := &findWriter{want: ids, found: found}
	_, err = schedules.Generate(fw, h.DRM, h.Params, "", 0)
	if err != nil && !errors.Is(err, errFoundAll) {
		return nil, fmt.Errorf("enumerate %s ops=%d replicas=%d: %w", c.DRM, c.Ops, c.Replicas, err)
	}
	return found, nil
}

var errFoundAll = errors.New("every schedule found")

// findWriter reads a schedule file as Generate writes it, keeping the schedules it wants.
type findWriter struct {
	want    map[string]bool
	found   map[string]schedules.Schedule
	line    int
	partial []byte
}

func (w *findWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.partial = append(w.partial, b...)
			break
		}
		line := b[:i]
		if len(w.partial) > 0 {
			line = append(w.partial, line...)
			w.partial = w.partial[:0]
		}
		b = b[i+1:]
		w.line++
		if err := w.take(line); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w *findWriter) take(line []byte) error {
	if len(line) <= schedules.IDLen || line[0] == '#' {
		return nil
	}
	id := string(line[:schedules.IDLen])
	if !w.want[id] {
		return nil
	}
	steps, err := schedules.ParseBody(string(line[schedules.IDLen+1:]))
	if err != nil {
		return fmt.Errorf("schedule %s: %w", id, err)
	}
	w.found[id] = schedules.Schedule{ID: id, Steps: steps, Line: w.line}
	if len(w.found) == len(w.want) {
		return errFoundAll
	}
	return nil
}
