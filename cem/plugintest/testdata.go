package plugintest

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/schedules"
)

// KeptSchedule reads the first schedule of a file kept in a plugin's testdata, "ID body" after
// comment lines, as a finding is kept, and checks that ID is the schedule's own for drm with
// params: the schedule is the one modulo gen wrote, not one written by hand.
func KeptSchedule(t testing.TB, path, drm string, params Params) (string, []aem.Transition) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, body, _ := strings.Cut(line, " ")
		steps, err := schedules.ParseBody(body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := schedules.ID(drm, params, schedules.Body(steps)); got != id {
			t.Fatalf("%s: schedule %s has ID %s, the file says %s", path, body, got, id)
		}
		return id, steps
	}
	t.Fatalf("%s holds no schedule", path)
	return "", nil
}
