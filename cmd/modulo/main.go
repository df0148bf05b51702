// Command modulo finds convergence failure bugs in replicated storage systems.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/modulo-testing/modulo/internal/cmd/root"
	"github.com/modulo-testing/modulo/internal/cmdutil"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := root.NewCmd(os.Stdout, os.Stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return cmdutil.ExitOK
	}
	code := cmdutil.MainCode(err)
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(os.Stderr, "modulo: "+strings.TrimSpace(msg))
	}
	return code
}
