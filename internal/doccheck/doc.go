// Package doccheck holds the tests that keep README.md and docs/ true at every commit: the
// Go identifiers and paths they quote exist, and every finding has its page in docs/bugs/ in
// the one shape an upstream developer reads. It has no code of its own.
package doccheck
