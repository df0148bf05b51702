package executor

import (
	"fmt"
	"io"
	"os"

	"github.com/modulo-testing/modulo/cem/proc"
)

// ephemeralRangeFile holds the range of ports Linux gives outgoing connections.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// checkPorts checks the ports of every worker, n from base, before the run: that they exist,
// that they lie outside the kernel's ephemeral range, and that they are free now. A port in
// the ephemeral range can be taken at any moment by an outgoing connection (a replica's link
// to its primary, for one), and stays taken for a minute in TIME_WAIT after it closes, so
// schedules there would fail at random with a busy port. With allowEphemeral (a host whose
// range leaves no room, as containers often have) the overlap is a warning written to warn.
func checkPorts(base, n int, allowEphemeral bool, warn io.Writer) error {
	last := base + n - 1
	if last > 65535 {
		return setupErrorf("the workers need ports %d-%d, beyond 65535: lower base_port or workers", base, last)
	}
	// Without the file (not Linux) there is no range to avoid.
	if lo, hi, err := ephemeralRange(); err == nil && base <= hi && lo <= last {
		msg := fmt.Sprintf("the workers' ports %d-%d overlap the ephemeral port range %d-%d (%s), where outgoing connections take theirs",
			base, last, lo, hi, ephemeralRangeFile)
		if allowEphemeral {
			fmt.Fprintf(warn, "modulo: warning: %s; a busy port will cost schedules\n", msg)
		} else {
			return setupErrorf("%s: %s", msg, portAdvice(lo, hi, n))
		}
	}
	if err := proc.CheckPortsFree(base, n); err != nil {
		return setupErrorf("%w: choose another base_port", err)
	}
	return nil
}

// portAdvice says where n ports fit outside the ephemeral range lo-hi, between 1024 and 65535,
// or that they do not.
func portAdvice(lo, hi, n int) string {
	switch {
	case lo-n >= 1024:
		return fmt.Sprintf("choose a base_port between 1024 and %d", lo-n)
	case hi+n <= 65536:
		return fmt.Sprintf("choose a base_port between %d and %d", hi+1, 65536-n)
	}
	return "no range of that many ports lies outside it on this host: set allow_ephemeral_ports = true (or --allow-ephemeral-ports) to run there anyway, or narrow the range"
}

// ephemeralRange reads the kernel's ephemeral port range.
func ephemeralRange() (lo, hi int, err error) {
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ephemeralRangeFile, err)
	}
	return lo, hi, nil
}
