package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/modulo-testing/modulo/oracle"
)

// Names of what replaying and shrinking add to a results directory. records.jsonl stays the
// campaign's own: nothing here rewrites it.
const (
	// ReproductionsFile holds one Reproduction per replay of a recorded schedule, appended as
	// each ends, durably as records are.
	ReproductionsFile = "reproductions.jsonl"
	// ReplaysDir holds the runs of every replay: replays/<ID>/<when>/<k>/ is run k's results.
	ReplaysDir = "replays"
	// ShrunkDir holds shrunk/<ID>/ for every schedule that was shrunk.
	ShrunkDir = "shrunk"
	// Stamp names the directory of one replay's or shrink's runs by its start, in UTC, to the
	// millisecond (a time layout).
	Stamp = "20060102T150405.000Z"
)

// Reproduction is what running a recorded schedule again, Repeat times, found.
type Reproduction struct {
	ID string `json:"id"`
	// Want is the verdict to reproduce: the one the campaign recorded.
	Want oracle.Verdict `json:"want"`
	// Repeat counts the runs that reached a verdict; Reproduced those whose verdict was Want.
	Repeat     int                    `json:"repeat"`
	Reproduced int                    `json:"reproduced"`
	Verdicts   map[oracle.Verdict]int `json:"verdicts"`
	// Made, for a replay that followed the recorded course (replay --follow), counts every run
	// made, those abandoned for leaving the course too: Repeat of Made followed it.
	Made int `json:"made,omitempty"`
	// FromPrefix says that each run restored the saved prefix the recorded run restored
	// (replay --from-prefix), where other replays run every step from scratch.
	FromPrefix bool `json:"from_prefix,omitempty"`
	// By is the command that replayed: "replay", or "shrink" confirming the failure it shrinks.
	By string `json:"by"`
	// Dir holds the runs' own results (their actions, data and logs), relative to the campaign
	// directory.
	Dir           string    `json:"dir"`
	PluginConfig  string    `json:"plugin_config,omitempty"`
	PluginVersion string    `json:"plugin_version"`
	ServerVersion string    `json:"server_version"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
}

// Rate is "k/K": how many of the runs reproduced the verdict.
func (r Reproduction) Rate() string { return fmt.Sprintf("%d/%d", r.Reproduced, r.Repeat) }

// Flaky tells that a non-pass verdict reproduced in none of at least one run that reached a
// verdict of the system's: not a bug until it shows again. Runs that all ended in an error (a
// fault of the harness or the machine) say nothing of the system.
func (r Reproduction) Flaky() bool {
	return r.Want != oracle.Pass && r.Repeat > r.Verdicts[oracle.Error] && r.Reproduced == 0
}

// AppendReproduction appends r to the reproductions of the campaign in dir: one write of one
// line to a file opened for appending, then fsync, so that concurrent replays do not mix
// their lines and a kill loses at most the line being written.
func AppendReproduction(dir string, r Reproduction) error {
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // plugin configurations may hold < and >
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("reproduction of %s: %w", r.ID, err)
	}
	path := filepath.Join(dir, ReproductionsFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("reproduction of %s: %w", r.ID, err)
	}
	_, err = f.Write(line.Bytes()) // Encode ends it with a newline
	if err := errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("reproduction of %s: write %s: %w", r.ID, path, err)
	}
	return nil
}

// ReadReproductions reads every complete reproduction of the campaign in dir, oldest first;
// a campaign never replayed has none.
func ReadReproductions(dir string) ([]Reproduction, error) {
	var rs []Reproduction
	_, skipped, err := readJSONL(filepath.Join(dir, ReproductionsFile), func(b []byte) error {
		var r Reproduction
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.ID == "" {
			return errors.New("no schedule ID")
		}
		rs = append(rs, r)
		return nil
	}, "reproduction")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && len(skipped) > 0 {
		err = errors.New(skipped[0])
	}
	return rs, err
}
