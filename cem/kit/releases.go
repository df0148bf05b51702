package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Releases says where scripts/setup builds releases of a system's server into modulo's cache
// (CacheDir), so that Info lists the ones there. Path is a release's file or directory relative
// to the cache, with <version> standing for its version ("etcd/<version>/etcd"), and Key is the
// plugin table's key that runs it ("server"). The zero Releases names none: a system whose
// releases come from elsewhere.
type Releases struct{ Path, Key string }

// versionMark stands for a release's version in Releases.Path.
const versionMark = "<version>"

// CacheDir is modulo's cache, where scripts/setup builds the server releases that no
// distribution here ships: $MODULO_CACHE, else "modulo" in the user's cache directory.
func CacheDir() (string, error) {
	if d := os.Getenv("MODULO_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("modulo's cache: %w", err)
	}
	return filepath.Join(base, "modulo"), nil
}

// found lists the versions of the releases in the cache, oldest first, and the table's line
// that runs one, with the home directory written "~" as the plugins' tables accept it. None,
// and no line, where r names none or the cache holds none.
func (r Releases) found() (versions []string, setting string, err error) {
	if r.Path == "" {
		return nil, "", nil
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, "", err
	}
	pattern := filepath.Join(cache, strings.Replace(r.Path, versionMark, "*", 1))
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, "", fmt.Errorf("releases at %s: %w", pattern, err)
	}
	// A release's version is the part of its path, under the cache, where Path has the mark.
	at := slices.Index(strings.Split(filepath.ToSlash(filepath.Clean(r.Path)), "/"), versionMark)
	for _, m := range matches {
		rel, err := filepath.Rel(cache, m)
		if err != nil {
			return nil, "", fmt.Errorf("releases at %s: %w", pattern, err)
		}
		versions = append(versions, strings.Split(filepath.ToSlash(rel), "/")[at])
	}
	if len(versions) == 0 {
		return nil, "", nil
	}
	slices.SortFunc(versions, compareVersions)
	path := filepath.Join(cache, r.Path)
	if home, err := os.UserHomeDir(); err == nil {
		if rel, err := filepath.Rel(home, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = filepath.Join("~", rel)
		}
	}
	return versions, fmt.Sprintf("%s = %q", r.Key, path), nil
}

// compareVersions orders dotted versions by their numbers ("3.5.21" before "3.10.0"), a part
// that is not a number after one that is, and such parts as text.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		an, aerr := strconv.Atoi(as[i])
		bn, berr := strconv.Atoi(bs[i])
		switch {
		case aerr == nil && berr == nil && an != bn:
			return an - bn
		case aerr == nil && berr != nil:
			return -1
		case aerr != nil && berr == nil:
			return 1
		case aerr != nil && as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}
