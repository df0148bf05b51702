// Package build holds what identifies this build of modulo.
package build

// Version is modulo's version; schedule files and results record it.
const Version = "0.1.0"

// Generator names this build in schedule file headers.
const Generator = "modulo " + Version
