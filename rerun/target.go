package rerun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// Target is a recorded schedule made ready to run again: where it comes from, what it did,
// and a plugin to run it with.
type Target struct {
	Summary *results.Summary
	// Header is the campaign's DRM and parameters; a shrunk schedule's write count is its own.
	Header   schedules.Header
	Schedule schedules.Schedule
	// Want is the verdict recorded for the schedule: the one to reproduce.
	Want oracle.Verdict
	// ConfigFrom says whose plugin table the runs use: the campaign's or a --config file's.
	ConfigFrom string
	// Setup runs the target; Prepare fills it in.
	Setup Setup
}

// UnknownScheduleError says that a campaign holds no schedule of that ID.
type UnknownScheduleError struct{ Dir, ID string }

func (e *UnknownScheduleError) Error() string {
	return fmt.Sprintf("%s: no schedule %s was recorded ('modulo results %s' lists those that did not pass)", e.Dir, e.ID, e.Dir)
}

// Recorded returns the campaign's latest record of the schedule; ok is false for a shrunk
// schedule, which the campaign did not run.
func (t *Target) Recorded() (results.Record, bool) {
	i := slices.IndexFunc(t.Summary.Latest, func(r results.Record) bool { return r.ID == t.Schedule.ID })
	if i < 0 {
		return results.Record{}, false
	}
	return t.Summary.Latest[i], true
}

// IsBadTarget tells whether err from Find is the user's to fix: the directory holds no
// campaign, or the campaign no such schedule.
func IsBadTarget(err error) bool {
	var unknown *UnknownScheduleError
	return errors.Is(err, results.ErrNotCampaign) || errors.As(err, &unknown)
}

// Find finds schedule id in the campaign in dir, among its records or the smallest schedules
// its shrinks found.
func Find(dir, id string) (*Target, error) {
	sum, err := results.ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	t := &Target{Summary: sum, Header: sum.Header}
	if err := t.find(id); err != nil {
		return nil, err
	}
	return t, nil
}

// Prepare prepares the target's plugin as `modulo run` does, for one cluster at a time, with
// the campaign's plugin table unless configFile names a configuration file, whose settings o
// overrides. The plugin's messages go to errOut. A problem the user must fix is an
// *executor.SetupError.
func (t *Target) Prepare(ctx context.Context, configFile string, o config.Overrides, errOut io.Writer) error {
	one := 1
	o.Workers = &one
	// Clusters go where the campaign's went, unless a flag or a configuration file says
	// otherwise: a port range the user chose for this host.
	if base := t.Summary.Campaign.BasePort; o.BasePort == nil && configFile == "" && base != 0 {
		o.BasePort = &base
	}
	// A step gets the time the campaign gave it, unless a flag or a configuration file says
	// otherwise.
	if st := t.Summary.Campaign.StepTimeout; o.StepTimeout == nil && configFile == "" && st != "" {
		d, err := time.ParseDuration(st)
		if err != nil {
			return &executor.SetupError{Err: fmt.Errorf("%s: step_timeout %q: %w", filepath.Join(t.Summary.Dir, results.CampaignFile), st, err)}
		}
		o.StepTimeout = &d
	}
	cfg, err := config.LoadWith(configFile, o)
	if err != nil {
		return &executor.SetupError{Err: err}
	}
	pluginConfig, from := []byte(t.Summary.Campaign.PluginConfig), "the campaign's"
	if configFile != "" {
		pluginConfig, from = cfg.Plugins[t.Header.DRM.Plugin], configFile+"'s"
	} else {
		// The plugin's Info must see the table the runs get: it names the server binary
		// (Redis's server, ZooKeeper's jar_dir), whose version the reproduction records.
		if cfg.Plugins == nil {
			cfg.Plugins = map[string][]byte{}
		}
		cfg.Plugins[t.Header.DRM.Plugin] = pluginConfig
	}
	info, launch, err := executor.Prepare(ctx, cfg, t.Header.DRM, t.Header.Params.Replicas, errOut)
	if err != nil {
		return err
	}
	// A run is judged as the campaign was; campaigns older than the setting were judged at
	// the end.
	check := t.Summary.Campaign.Check
	if check == "" {
		check = oracle.End
	}
	if o.Check != nil {
		check = *o.Check
	}
	t.ConfigFrom = from
	t.Setup = Setup{
		Info: info, PluginConfig: pluginConfig, Launch: launch,
		BasePort: cfg.BasePort, StepTimeout: cfg.StepTimeout, Check: check,
	}
	return nil
}

// find looks id up: a recorded schedule's transitions are in its failure folder, or else
// enumerated again from the model; a shrunk one's are in its shrink.
func (t *Target) find(id string) error {
	sum := t.Summary
	if i := slices.IndexFunc(sum.Latest, func(r results.Record) bool { return r.ID == id }); i >= 0 {
		t.Want = sum.Latest[i].Verdict
		if t.Want != oracle.Pass {
			f, err := results.ReadFailure(sum.Dir, id)
			if err != nil {
				return err
			}
			t.Schedule = f.Schedule
			return t.check()
		}
		found, err := results.FindSchedules(sum.Campaign, map[string]bool{id: true})
		if err != nil {
			return err
		}
		s, ok := found[id]
		if !ok {
			return fmt.Errorf("%s: schedule %s is recorded but is not a schedule of %s ops=%d replicas=%d",
				sum.Dir, id, t.Header.DRM.Name, t.Header.Params.Ops, t.Header.Params.Replicas)
		}
		t.Schedule = s
		return t.check()
	}
	for _, sh := range sum.Shrunk {
		if sh.Smallest.ID != id {
			continue
		}
		steps, err := schedules.ParseBody(sh.Smallest.Body)
		if err != nil {
			return fmt.Errorf("%s: shrink of %s: %w", sum.Dir, sh.Of.ID, err)
		}
		t.Want, t.Header.Params.Ops = sh.Want, sh.Smallest.Ops
		t.Schedule = schedules.Schedule{ID: id, Steps: steps}
		return t.check()
	}
	return &UnknownScheduleError{Dir: sum.Dir, ID: id}
}

// check makes sure the schedule is one of the model and that its ID is its own: a folder
// edited by hand must not run something else under the ID.
func (t *Target) check() error {
	s, h := t.Schedule, t.Header
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return err
	}
	if _, err := g.Follow(s.Steps); err != nil {
		return fmt.Errorf("schedule %s: not a %s schedule: %w", s.ID, h.DRM.Title, err)
	}
	if want := schedules.ID(h.DRM.Name, h.Params, schedules.Body(s.Steps)); want != s.ID {
		return fmt.Errorf("schedule %s: its transitions have ID %s: edited by hand?", s.ID, want)
	}
	return nil
}

// Describe says what is about to run, in two lines.
func (t *Target) Describe(w io.Writer) {
	h, c := t.Header, t.Summary.Campaign
	fmt.Fprintf(w, "%s (%s on %s), ops=%d, replicas=%d, recorded %s: %s\n",
		h.DRM.Name, h.DRM.Title, h.DRM.System, h.Params.Ops, h.Params.Replicas, t.Want, schedules.Body(t.Schedule.Steps))
	cfg := results.OneLine(string(t.Setup.PluginConfig))
	if cfg == "" {
		cfg = "(empty)"
	}
	fmt.Fprintf(w, "plugin %s %s, server %s; plugin config (%s): %s\n",
		t.Setup.Info.Name, t.Setup.Info.Version, t.Setup.Info.ServerVersion, t.ConfigFrom, cfg)
	if i := t.Setup.Info; i.Version != c.PluginVersion || i.ServerVersion != c.ServerVersion {
		fmt.Fprintf(w, "note: the campaign ran plugin %s %s with server %s\n", c.Plugin, c.PluginVersion, c.ServerVersion)
	}
}

// Reproduction is the record of res, runs of the target made by the command by, kept in dir
// (a path inside the campaign directory).
func (t *Target) Reproduction(res Result, by, dir string, start time.Time) results.Reproduction {
	return results.Reproduction{
		ID: t.Schedule.ID, Want: t.Want,
		Repeat: len(res.Records), Reproduced: res.Count(t.Want), Verdicts: res.Verdicts(),
		By: by, Dir: dir, PluginConfig: string(t.Setup.PluginConfig),
		PluginVersion: t.Setup.Info.Version, ServerVersion: t.Setup.Info.ServerVersion,
		Start: start.UTC(), End: time.Now().UTC(),
	}
}
