package executor

import (
	"fmt"
	"os"

	"github.com/modulo-testing/modulo/cem/proc"
)

// ephemeralRangeFile holds the range of ports Linux gives outgoing connections.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// checkPorts checks the ports of every worker, n from base, before the run: that they exist,
// that they lie outside the kernel's ephemeral range, and that they are free now. A port in
// the ephemeral range can be taken at any moment by an outgoing connection (a replica's link
// to its primary, for one), and stays taken for a minute in TIME_WAIT after it closes, so
// schedules there would fail at random with a busy port.
func checkPorts(base, n int) error {
	last := base + n - 1
	if last > 65535 {
		return setupErrorf("the workers need ports %d-%d, beyond 65535: lower base_port or workers", base, last)
	}
	// Without the file (not Linux) there is no range to avoid.
	if lo, hi, err := ephemeralRange(); err == nil && base <= hi && lo <= last {
		return setupErrorf("the workers' ports %d-%d overlap the ephemeral port range %d-%d (%s), where outgoing connections take theirs: choose a base_port of at most %d",
			base, last, lo, hi, ephemeralRangeFile, lo-n)
	}
	if err := proc.CheckPortsFree(base, n); err != nil {
		return setupErrorf("%w: choose another base_port", err)
	}
	return nil
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
