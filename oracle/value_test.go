package oracle

import (
	"strings"
	"testing"
)

func TestShortValue(t *testing.T) {
	// The digests are sha256sum's of the same bytes, cut to 8 hex digits.
	tests := []struct{ v, want string }{
		{"", `""`},
		{"k1:final", `"k1:final"`},
		{strings.Repeat("x", WholeValueLen), `"` + strings.Repeat("x", WholeValueLen) + `"`},
		{strings.Repeat("x", 50), `"xxxxxxxxxxxxxxxx"… (50 bytes, sha256 77cf1206)`},
		// The paper's Redis preset: a value padded with dots to 10 KB.
		{"k3.1" + strings.Repeat(".", 10236), `"k3.1............"… (10240 bytes, sha256 ` + dots10k + `)`},
		{"tab\there" + strings.Repeat("y", 40), `"tab\thereyyyyyyyy"… (48 bytes, sha256 9528c669)`},
	}
	for _, tt := range tests {
		if got := ShortValue(tt.v); got != tt.want {
			t.Errorf("ShortValue(%.20q...) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

// dots10k is the digest of "k3.1" and 10,236 dots.
const dots10k = "6fa01a6d"

func TestAbbreviate(t *testing.T) {
	long := "k3.1" + strings.Repeat(".", 10236)
	tests := []struct{ text, want string }{
		{"1 key differs: k (r0=\"a\" r1=<missing>)", "1 key differs: k (r0=\"a\" r1=<missing>)"},
		{"k3.1 on replica 1 (acknowledged \"k3.1\", holds \"" + long + "\")",
			"k3.1 on replica 1 (acknowledged \"k3.1\", holds \"k3.1............\"… (10240 bytes, sha256 " + dots10k + "))"},
		{"k (r0=\"" + long + "\" r1=\"" + long + "x\")", "k (r0=\"k3.1............\"… (10240 bytes, sha256 " + dots10k + ") r1=\"k3.1............\"… (10241 bytes, sha256 " + dotsx + "))"},
		{"escaped \"\\\"" + strings.Repeat("q", 45) + "\" end", "escaped \"\\\"qqqqqqqqqqqqqqq\"… (46 bytes, sha256 " + quotes46 + ") end"},
	}
	for _, tt := range tests {
		if got := Abbreviate(tt.text); got != tt.want {
			t.Errorf("Abbreviate(%.60q...) =\n%s\nwant\n%s", tt.text, got, tt.want)
		}
	}
}

// dotsx is the digest of "k3.1", 10,236 dots and an x.
const dotsx = "4def0447"

// quotes46 is the digest of a double quote and 45 q's.
const quotes46 = "783dee82"
