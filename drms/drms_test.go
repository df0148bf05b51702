package drms

import (
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name, want, wantErr string
	}{
		{"qcz", "Q/C/Z", ""},
		{"QCM", "Q/C/M", ""},
		{"s/cl/r", "S/CL/R", ""},
		{"slr", "S/L/R", ""},
		{"ssr", "S/S/R", ""},
		{"raft", "", `unknown DRM "raft" (known: qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr)`},
	}
	for _, tt := range tests {
		d, err := Lookup(tt.name)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Lookup(%q) error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || d.Title != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.name, d.Title, err, tt.want)
		}
	}
}

// TestCatalogue checks that every DRM's model carries its title and that the paper's default
// parameters are among the values it ran and make schedules.
func TestCatalogue(t *testing.T) {
	for _, d := range Builtin() {
		if d.Model.Name() != d.Title {
			t.Errorf("%s: model %s", d.Name, d.Model.Name())
		}
		g, err := aem.NewGraph(d.Model, d.Defaults)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if n, err := g.Count(); err != nil || n == 0 {
			t.Errorf("%s defaults %+v: %d schedules, %v", d.Name, d.Defaults, n, err)
		}
	}
}

// fakeResolver declares DRMs as a plugin would.
type fakeResolver struct {
	declared []DRM
	err      error
}

func (f fakeResolver) Declared() ([]DRM, error) { return f.declared, f.err }
func (fakeResolver) AddDir(string)              {}

// TestDeclare: a plugin's DRM is made from what it declares, under any title, with the rule
// set's model; what it may not declare is refused, naming the plugin.
func TestDeclare(t *testing.T) {
	d, err := Declare("postgres", "pgl", "S/CL/P", "crash-link", "PostgreSQL", "streaming replication", aem.Params{Ops: 1, Replicas: 2}, []int{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Model.Name() != "S/CL/P" || d.Model.Rules() != aem.CrashLinkRules || !d.Declared || d.Plugin != "postgres" {
		t.Errorf("declared %+v", d)
	}
	// Same rules, same schedules: the title changes nothing but the name.
	for _, p := range []aem.Params{{Ops: 1, Replicas: 2}, {Ops: 2, Replicas: 2}} {
		gd, _ := aem.NewGraph(d.Model, p)
		gs, _ := aem.NewGraph(aem.SCLR, p)
		nd, _ := gd.Count()
		ns, _ := gs.Count()
		if nd != ns || nd == 0 {
			t.Errorf("%+v: %d schedules under the declared title, %d under S/CL/R", p, nd, ns)
		}
	}
	bad := []struct{ name, title, rules, want string }{
		{"PG", "S/CL/P", "sclr", "lower-case letters and digits"},
		{"qcz", "Q/C/X", "qcz", "the built-in DRM qcz"},
		{"pgx", "S/L/R", "slr", "has its title"},
		{"pgx", "P/X", "paxos", "unknown rule set"},
		{"pgx", "", "slr", "needs a title"},
	}
	for _, b := range bad {
		_, err := Declare("postgres", b.name, b.title, b.rules, "PostgreSQL", "", aem.Params{Ops: 1, Replicas: 2}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "plugin postgres") {
			t.Errorf("Declare(%q, %q, %q) = %v, want an error naming the plugin and %q", b.name, b.title, b.rules, err, b.want)
		}
	}

	SetResolver(fakeResolver{declared: []DRM{d}})
	defer SetResolver(nil)
	for _, name := range []string{"pgl", "S/CL/P", "qcz"} {
		if _, err := Lookup(name); err != nil {
			t.Errorf("Lookup(%q) with the plugin's DRM declared: %v", name, err)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "pgl (postgres plugin)") {
		t.Errorf("an unknown DRM's error does not list the declared one: %v", err)
	}
	if all, err := All(); err != nil || len(all) != len(Builtin())+1 {
		t.Errorf("All() = %d DRMs, %v; want the built-in ones and the declared one", len(all), err)
	}
}

// TestSpecPowerLoss: a declared DRM's power loss survives the round trip through its Spec, and
// is refused for a rule set that crashes no server.
func TestSpecPowerLoss(t *testing.T) {
	tests := []struct {
		rules, want string
	}{
		{"quorum", ""},
		{"crash-link", ""},
		{"suspend", "crashes no server"},
		{"link", "crashes no server"},
	}
	for _, tt := range tests {
		s := Spec{Name: "qpx", Title: "Q/P/X", Rules: tt.rules, System: "X", Ops: 1, Replicas: 3, PowerLoss: true}
		d, err := s.DRM("x")
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("rules %s with power loss: %v, want an error saying %q", tt.rules, err, tt.want)
			}
			continue
		}
		if err != nil || !d.PowerLoss || !d.Spec().PowerLoss {
			t.Errorf("rules %s with power loss: %+v, %v; want a DRM whose crashes are power losses", tt.rules, d, err)
		}
	}
	for _, name := range []string{"qpz", "qpe"} {
		if d, err := Lookup(name); err != nil || !d.PowerLoss || d.Model.Rules() != aem.QuorumRules {
			t.Errorf("Lookup(%s) = %+v, %v; want a quorum DRM with power losses", name, d, err)
		}
	}
}

// TestSpecPartition: a declared DRM's partitions survive the round trip through its Spec, only
// on the quorum and link rules, and never with power losses.
func TestSpecPartition(t *testing.T) {
	tests := []struct {
		rules     string
		powerLoss bool
		want      string
	}{
		{"quorum", false, ""},
		{"link", false, ""},
		{"crash-link", false, "partitions realise the quorum rules' crashes and the link rules' link failures only"},
		{"suspend", false, "partitions realise the quorum rules' crashes and the link rules' link failures only"},
		{"quorum", true, "power losses or partitions, not both"},
	}
	for _, tt := range tests {
		s := Spec{Name: "qnx", Title: "Q/N/X", Rules: tt.rules, System: "X", Ops: 1, Replicas: 3, Partition: true, PowerLoss: tt.powerLoss}
		d, err := s.DRM("x")
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("rules %s with partitions (power loss %v): %v, want an error saying %q", tt.rules, tt.powerLoss, err, tt.want)
			}
			continue
		}
		if err != nil || !d.Partition || !d.Spec().Partition || d.PowerLoss {
			t.Errorf("rules %s with partitions: %+v, %v; want a DRM whose crashes are partitions", tt.rules, d, err)
		}
	}
	for _, name := range []string{"qnz", "qne"} {
		if d, err := Lookup(name); err != nil || !d.Partition || d.PowerLoss || d.Model.Rules() != aem.QuorumRules {
			t.Errorf("Lookup(%s) = %+v, %v; want a quorum DRM with partitions", name, d, err)
		}
	}
}

func TestPartitions(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"qcz", false}, {"slr", false}, {"qpz", false},
		{"qnz", true}, {"qne", true}, {"snr", true}, {"qcnz", true}, {"qcne", true},
	} {
		d, err := Lookup(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Partitions(); got != tt.want {
			t.Errorf("%s.Partitions() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCompose checks the DRMs whose names add failure kinds: their model mixes the base's kind
// with the added ones, in the kinds' order whatever the name's, and names nothing twice.
func TestCompose(t *testing.T) {
	for _, tt := range []struct {
		name, want, title string
		kinds             []aem.Failure
		err               string
	}{
		{"qcz+pause", "qcz+pause", "Q/C/Z+pause", []aem.Failure{aem.FailCrash, aem.FailPause}, ""},
		{"qpz+s", "qpz+pause", "Q/P/Z+pause", []aem.Failure{aem.FailPowerLoss, aem.FailPause}, ""},
		{"qce+pause+partition", "qce+partition+pause", "Q/C/E+partition+pause", []aem.Failure{aem.FailCrash, aem.FailPartition, aem.FailPause}, ""},
		{"qnz+crash", "qnz+crash", "Q/N/Z+crash", []aem.Failure{aem.FailCrash, aem.FailPartition}, ""},
		{"qcnz+pause", "qcnz+pause", "Q/CN/Z+pause", []aem.Failure{aem.FailCrash, aem.FailPartition, aem.FailPause}, ""},
		{"qcz+crash", "", "", nil, "fails replicas by crash already"},
		{"sclr+power-loss", "sclr+power-loss", "S/CL/R+power-loss", []aem.Failure{aem.FailCrash, aem.FailPowerLoss}, ""},
		{"sclr+pause", "", "", nil, "power loss besides a crash, not pause"},
		{"slr+pause", "", "", nil, "only a quorum or crash-link DRM"},
		{"qcz+nap", "", "", nil, `unknown failure kind "nap"`},
		{"qxz+pause", "", "", nil, `unknown DRM "qxz"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Lookup(tt.name)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Lookup(%q) = %s, %v; want an error saying %q", tt.name, d.Name, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != tt.want || d.Title != tt.title || !slices.Equal(d.Kinds(), tt.kinds) || !d.Model.FailureKinds() {
				t.Errorf("Lookup(%q) = %s %s, kinds %v; want %s %s, kinds %v", tt.name, d.Name, d.Title, d.Kinds(), tt.want, tt.title, tt.kinds)
			}
			if again, err := Lookup(d.Name); err != nil || again.Name != d.Name {
				t.Errorf("Lookup(%q) again = %s, %v", d.Name, again.Name, err)
			}
			if d.Partitions() != slices.Contains(tt.kinds, aem.FailPartition) {
				t.Errorf("%s: Partitions() = %v", d.Name, d.Partitions())
			}
		})
	}
	// A declared DRM composes too, and its spec is its base's, for campaign.json.
	base, err := Spec{Name: "qcn", Title: "Q/C/N", Rules: "quorum", System: "NATS", Ops: 1, Replicas: 3}.DRM("nats")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Compose(base, []aem.Failure{aem.FailPause})
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Spec(); s == nil || s.Name != "qcn" || s.Title != "Q/C/N" || s.Rules != "quorum" {
		t.Errorf("the composed %s's spec %+v, want qcn's", d.Name, s)
	}
}

func TestKindsOfDRMs(t *testing.T) {
	for name, want := range map[string][]aem.Failure{
		"qcz": {aem.FailCrash}, "qpz": {aem.FailPowerLoss}, "qnz": {aem.FailPartition},
		"qcnz": {aem.FailCrash, aem.FailPartition}, "ssr": {aem.FailPause}, "sclr": {aem.FailCrash}, "slr": nil,
	} {
		d, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Kinds(); !slices.Equal(got, want) {
			t.Errorf("%s: Kinds() = %v, want %v", name, got, want)
		}
	}
}

// TestDeclared finds a DRM among a plugin's declarations by name or title, composed with the
// kinds its name adds, and says where none is.
func TestDeclared(t *testing.T) {
	specs := []Spec{{Name: "qcn", Title: "Q/C/N", Rules: "quorum", System: "NATS", Ops: 1, Replicas: 3}}
	for _, tt := range []struct {
		name, want string
		ok         bool
		err        string
	}{
		{"qcn", "qcn", true, ""},
		{"Q/C/N", "qcn", true, ""},
		{"qcn+pause", "qcn+pause", true, ""},
		{"qcn+crash", "", true, "fails replicas by crash already"},
		{"qcz+pause", "", false, ""},
		{"qcn+nap", "", true, `unknown failure kind "nap"`},
	} {
		d, ok, err := Declared(tt.name, "nats", specs)
		switch {
		case ok != tt.ok:
			t.Errorf("Declared(%q): ok = %v, want %v", tt.name, ok, tt.ok)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Declared(%q) error %v, want one saying %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || d.Name != tt.want):
			t.Errorf("Declared(%q) = %s, %v; want %s", tt.name, d.Name, err, tt.want)
		}
	}
}

// TestKindOf: a quorum model of one kind names none, and its DRM's kind stands for it; a model
// that names kinds, or has no quorum, is taken at its word.
func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		drm     string
		f, want aem.Failure
	}{
		{"qcz", aem.NotInLayout, aem.FailCrash},
		{"qpz", aem.NotInLayout, aem.FailPowerLoss},
		{"qnz", aem.NotInLayout, aem.FailPartition},
		{"qcnz", aem.NotInLayout, aem.NotInLayout},
		{"qcnz", aem.FailPartition, aem.FailPartition},
		{"qcz+pause", aem.FailPause, aem.FailPause},
		{"ssr", aem.NotInLayout, aem.NotInLayout},
		{"sclr", aem.FailCrash, aem.FailCrash},
	} {
		d, err := Lookup(tt.drm)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.KindOf(tt.f); got != tt.want {
			t.Errorf("%s: KindOf(%s) = %s, want %s", tt.drm, tt.f, got, tt.want)
		}
	}
}
