package oracle

import (
	"strings"
	"testing"
)

// paper is a value as the paper's Redis preset writes it: the kit's value, padded with dots to
// 10 KB.
var paper = "ba5d94d40dfd18ed:k3.1.1" + strings.Repeat(".", 10240-23)

// The digests below are sha256sum's of the same bytes, cut to 8 hex digits.
const (
	paperDigest  = "b7ce7e2a" // paper
	paperXDigest = "c5407281" // paper and an x
)

func TestShortValue(t *testing.T) {
	tests := []struct{ v, want string }{
		{"", `""`},
		{"55d49ebff3dee241:k1.1:final", `"55d49ebff3dee241:k1.1:final"`},
		{strings.Repeat("x", WholeValueLen), `"` + strings.Repeat("x", WholeValueLen) + `"`},
		{strings.Repeat("x", 70), `"` + strings.Repeat("x", 32) + `"… (70 bytes, sha256 c71bd109)`},
		{paper, `"ba5d94d40dfd18ed:k3.1.1........."… (10240 bytes, sha256 ` + paperDigest + `)`},
		{"tab\there" + strings.Repeat("y", 60), `"tab\there` + strings.Repeat("y", 24) + `"… (68 bytes, sha256 04b5c703)`},
	}
	for _, tt := range tests {
		if got := ShortValue(tt.v); got != tt.want {
			t.Errorf("ShortValue(%.20q...) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestAbbreviate(t *testing.T) {
	short := `"ba5d94d40dfd18ed:k3.1.1........."… (10240 bytes, sha256 ` + paperDigest + `)`
	tests := []struct{ text, want string }{
		{`1 key differs: k (r0="a" r1=<missing>)`, `1 key differs: k (r0="a" r1=<missing>)`},
		{`k3.1.1 on replica 1 (acknowledged "ba5d94d40dfd18ed:k3.1.1", holds "` + paper + `")`,
			`k3.1.1 on replica 1 (acknowledged "ba5d94d40dfd18ed:k3.1.1", holds ` + short + `)`},
		{`k (r0="` + paper + `" r1="` + paper + `x")`,
			`k (r0=` + short + ` r1="ba5d94d40dfd18ed:k3.1.1........."… (10241 bytes, sha256 ` + paperXDigest + `))`},
		{`escaped "\"` + strings.Repeat("q", 70) + `" end`, `escaped "\"` + strings.Repeat("q", 31) + `"… (71 bytes, sha256 26e9e764) end`},
	}
	for _, tt := range tests {
		if got := Abbreviate(tt.text); got != tt.want {
			t.Errorf("Abbreviate(%.60q...) =\n%s\nwant\n%s", tt.text, got, tt.want)
		}
	}
}
