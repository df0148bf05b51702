package oracle_test

import (
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
)

func replicas(rs ...cem.ReplicaData) cem.Snapshot { return cem.Snapshot{Replicas: rs} }

func data(kv ...string) cem.ReplicaData {
	d := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		d[kv[i]] = kv[i+1]
	}
	return cem.ReplicaData{Data: d}
}

func inGroup(g int, r cem.ReplicaData) cem.ReplicaData {
	r.Group = g
	return r
}

func TestCompare(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		name      string
		snap      cem.Snapshot
		converged bool
		line      string
		report    string
	}{
		{
			name:      "same data",
			snap:      replicas(data("a", "1", "b", "2"), data("b", "2", "a", "1"), data("a", "1", "b", "2")),
			converged: true,
		},
		{
			name:      "all empty",
			snap:      replicas(data(), data()),
			converged: true,
		},
		{
			name:   "a value differs",
			snap:   replicas(data("a", "1"), data("a", "2"), data("a", "1")),
			line:   `1 key differs: a (r0="1" r1="2" r2="1")`,
			report: "1 key differs:\n  a: r0=\"1\" r1=\"2\" r2=\"1\"\n",
		},
		{
			name:   "a key is missing, an empty value is not",
			snap:   replicas(data("a", ""), data()),
			line:   `1 key differs: a (r0="" r1=<missing>)`,
			report: "1 key differs:\n  a: r0=\"\" r1=<missing>\n",
		},
		{
			name:   "an unreadable replica is a fail, and is named",
			snap:   replicas(data("a", "1"), cem.ReplicaData{Err: "dial tcp 127.0.0.1:7001: connection refused\nmore"}, data("a", "1")),
			line:   "replica 1 unreadable: dial tcp 127.0.0.1:7001: connection refused",
			report: "replica 1 could not be read: dial tcp 127.0.0.1:7001: connection refused\nmore\n",
		},
		{
			name:   "no replica readable",
			snap:   replicas(cem.ReplicaData{Err: "down"}, cem.ReplicaData{Err: "down"}),
			line:   "replica 0 unreadable: down; replica 1 unreadable: down",
			report: "replica 0 could not be read: down\nreplica 1 could not be read: down\n",
		},
		{
			name:   "unreadable and differing",
			snap:   replicas(data("a", "1"), data("a", "2"), cem.ReplicaData{Err: "down"}),
			line:   `replica 2 unreadable: down; 1 key differs: a (r0="1" r1="2" r2=<unreadable>)`,
			report: "replica 2 could not be read: down\n1 key differs:\n  a: r0=\"1\" r1=\"2\" r2=<unreadable>\n",
		},
		{
			name:      "groups agree within, not across",
			snap:      replicas(inGroup(0, data("a", "1")), inGroup(2, data("a", "2")), inGroup(0, data("a", "1"))),
			converged: true,
			line:      "compared within 2 groups: {0 2} {1}",
			report:    "replicas compared within 2 groups: {0 2} {1}\n",
		},
		{
			name:   "a group disagrees within",
			snap:   replicas(inGroup(0, data("a", "1")), inGroup(1, data("a", "2")), inGroup(1, data())),
			line:   `compared within 2 groups: {0} {1 2}; 1 key differs: a (r0="1" r1="2" r2=<missing>)`,
			report: "replicas compared within 2 groups: {0} {1 2}\n1 key differs:\n  a: r0=\"1\" r1=\"2\" r2=<missing>\n",
		},
		{
			name: "the line names 3 keys, the report all, a line each; long values are shortened in the line only",
			snap: replicas(data("k1", "1", "k2", "2", "k3", long, "k4", "4", "k5", "5"), data()),
			line: `5 keys differ: k1 (r0="1" r1=<missing>), k2 (r0="2" r1=<missing>), k3 (r0="` + long[:32] + `"… (70 bytes, sha256 c71bd109) r1=<missing>), and 2 more`,
			report: "5 keys differ:\n" +
				"  k1: r0=\"1\" r1=<missing>\n" +
				"  k2: r0=\"2\" r1=<missing>\n" +
				"  k3: r0=\"" + long + "\" r1=<missing>\n" +
				"  k4: r0=\"4\" r1=<missing>\n" +
				"  k5: r0=\"5\" r1=<missing>\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := oracle.Compare(tt.snap)
			if d.Converged() != tt.converged {
				t.Fatalf("Converged() = %v, want %v (%+v)", d.Converged(), tt.converged, d)
			}
			if got := d.Line(); got != tt.line {
				t.Errorf("Line() =\n%s\nwant\n%s", got, tt.line)
			}
			if got := d.Report(); got != tt.report {
				t.Errorf("Report() =\n%s\nwant\n%s", got, tt.report)
			}
		})
	}
}
