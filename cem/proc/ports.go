package proc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// CheckPortFree tells whether port on 127.0.0.1 can be listened on, with a one-line error
// such as "port 127.0.0.1:7001 is already in use" when it cannot.
func CheckPortFree(port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %s is out of range", addr)
	}
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %s is already in use", addr)
	}
	if err != nil {
		return fmt.Errorf("port %s: %w", addr, err)
	}
	return l.Close()
}

// CheckPortsFree checks count consecutive ports from base, naming the first busy one.
func CheckPortsFree(base, count int) error {
	for p := base; p < base+count; p++ {
		if err := CheckPortFree(p); err != nil {
			return err
		}
	}
	return nil
}
