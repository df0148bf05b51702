package oracle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// A value longer than WholeValueLen bytes is shown by ShortValue as its first ValueHeadLen
// bytes, its length and a short digest: the paper's Redis preset writes 10 KB values, and two
// replicas' values that differ past their first bytes must still read as different, in one
// line per key. The kit's values start with the schedule's 16-digit ID and the key
// ("ba5d94d40dfd18ed:k3.1.1"), which the first bytes must show. The full values stay in the
// failure folder (replicas.json, verdict.txt).
const (
	WholeValueLen = 64
	ValueHeadLen  = 32
)

// ShortValue renders a value for a line: quoted whole when it is at most WholeValueLen bytes,
// else as `"its first 32 bytes"… (10240 bytes, sha256 b7ce7e2a)`.
func ShortValue(v string) string {
	if len(v) <= WholeValueLen {
		return strconv.Quote(v)
	}
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("%q… (%d bytes, sha256 %s)", v[:ValueHeadLen], len(v), hex.EncodeToString(sum[:4]))
}

// Abbreviate renders every quoted value in text (as %q writes them) longer than WholeValueLen
// bytes as ShortValue does: for details that were recorded with whole values.
func Abbreviate(text string) string {
	if len(text) <= WholeValueLen {
		return text
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '"')
		if i < 0 {
			break
		}
		b.WriteString(text[:i])
		q, err := strconv.QuotedPrefix(text[i:])
		if err != nil { // a lone quote, not a value
			b.WriteByte('"')
			text = text[i+1:]
			continue
		}
		v, _ := strconv.Unquote(q) // QuotedPrefix found it valid
		if len(v) > WholeValueLen {
			b.WriteString(ShortValue(v))
		} else {
			b.WriteString(q)
		}
		text = text[i+len(q):]
	}
	b.WriteString(text)
	return b.String()
}
