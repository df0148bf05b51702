// Package schedules is modulo's schedule file format: a header that says what generated the
// schedules, then one schedule per line, each with an ID derived from its content.
//
//	# modulo schedules v1
//	# drm: qcz
//	# ops: 1
//	# replicas: 3
//	# generator: modulo 0.1.0
//	# schedules: 6
//	3f9a0c2d41b7e6a1 D[0,0,1] C[0,1] C[2]
//
// Transitions use the compact text of package aem. The ID is the first 64 bits, in hex, of the
// SHA-256 of the DRM, the parameters and the transitions, so the same schedule has the same ID
// in every run and on every machine. The header's schedule count lets a reader tell a complete
// file from a truncated one.
package schedules

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
)

// Magic is the first line of every schedule file.
const Magic = "# modulo schedules v1"

// Header describes a schedule file.
type Header struct {
	DRM       drms.DRM
	Params    aem.Params
	Generator string
	Count     uint64 // schedules in the file
}

// Schedule is one schedule read from a file.
type Schedule struct {
	ID    string
	Steps []aem.Transition
	Line  int // line number in its file, for messages
}

// IDLen is the length of a schedule ID in hex digits.
const IDLen = 16

// ID derives the ID of a schedule from its DRM, parameters and the compact text of its
// transitions, separated by single spaces.
func ID(drm string, p aem.Params, body []byte) string {
	sum := sha256.Sum256(append(idPrefix(drm, p), body...))
	return hex.EncodeToString(sum[:IDLen/2])
}

// ParseBody parses the transitions of a schedule line's body, separated by single spaces.
func ParseBody(body string) ([]aem.Transition, error) {
	var steps []aem.Transition
	for _, tok := range strings.Split(body, " ") {
		t, err := aem.ParseTransition(tok)
		if err != nil {
			return nil, err
		}
		steps = append(steps, t)
	}
	return steps, nil
}

// Body renders transitions as a schedule line's body.
func Body(steps []aem.Transition) []byte {
	var b []byte
	for i := range steps {
		if i > 0 {
			b = append(b, ' ')
		}
		b = steps[i].AppendText(b)
	}
	return b
}

// Stream returns ss one by one, then io.EOF, as Reader.Next returns a file's schedules.
func Stream(ss []Schedule) func() (Schedule, error) {
	return func() (Schedule, error) {
		if len(ss) == 0 {
			return Schedule{}, io.EOF
		}
		s := ss[0]
		ss = ss[1:]
		return s, nil
	}
}
