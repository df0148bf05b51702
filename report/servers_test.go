package report

import (
	"reflect"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/results"
)

func TestServersOf(t *testing.T) {
	act := func(step int, what ...cem.Action) results.StepActions {
		return results.StepActions{Step: step, Actions: what}
	}
	on := func(r int, what string) cem.Action { return cem.Action{Replica: r, What: what} }
	actions := []results.StepActions{
		act(0, on(-1, "map abstract replica 0 to zk-2 (the leader) and abstract replica 2 to zk-0"),
			on(0, "zk-2: write k1.1"), on(2, "zk-0: SIGKILL process group 7")),
		act(1, on(1, "zk-1: start java (pid 9, start 2)"), on(1, "holds nothing: a line without a server")),
	}
	got := serversOf(actions, 3, 3)
	want := [][]string{
		{"", "", ""}, // no action at the start
		{"zk-2", "", "zk-0"},
		{"zk-2", "zk-1", "zk-0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("serversOf = %v, want %v", got, want)
	}
}
