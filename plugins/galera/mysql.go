package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// A minimal client of MySQL's protocol, enough for the plugin: user root without a password,
// text queries, rows of strings. The mariadb client costs a process for every query, and the
// kit polls every 50 ms; modulo's module has no MySQL driver to import.

// Capability flags of the handshake (MySQL's CLIENT_*).
const (
	clientLongPassword = 1 << 0
	clientProtocol41   = 1 << 9
	clientTransactions = 1 << 13
	clientSecureConn   = 1 << 15
)

// sqlError is an error packet of the server: MySQL's error number and message.
type sqlError struct {
	Code    uint16
	Message string
}

func (e *sqlError) Error() string { return fmt.Sprintf("ERROR %d: %s", e.Code, e.Message) }

// session is one connection to a server, as root.
type session struct {
	c   net.Conn
	seq byte
}

// dial connects to addr and logs in as root. The connection ends when ctx does: a query on a
// suspended server then fails rather than hanging.
func dial(ctx context.Context, addr string) (*session, func(), error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	s := &session{c: c}
	closer := func() { stop(); _ = c.Close() }
	if err := s.login(); err != nil {
		closer()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, nil, err
	}
	return s, closer, nil
}

func (s *session) read() ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(s.c, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	s.seq = h[3] + 1
	p := make([]byte, n)
	_, err := io.ReadFull(s.c, p)
	return p, err
}

func (s *session) write(p []byte) error {
	h := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), s.seq}
	s.seq++
	_, err := s.c.Write(append(h, p...))
	return err
}

// errorPacket reads an error packet: 0xff, the code, '#' and the SQL state, the message.
func errorPacket(p []byte) error {
	if len(p) < 3 {
		return errors.New("short error packet")
	}
	msg := p[3:]
	if len(msg) > 6 && msg[0] == '#' {
		msg = msg[6:]
	}
	return &sqlError{Code: binary.LittleEndian.Uint16(p[1:3]), Message: string(msg)}
}

// login answers the server's greeting as root with an empty password (an authentication
// switch is answered with the empty password too).
func (s *session) login() error {
	greeting, err := s.read()
	if err != nil {
		return err
	}
	if len(greeting) > 0 && greeting[0] == 0xff {
		return errorPacket(greeting)
	}
	var resp bytes.Buffer
	_ = binary.Write(&resp, binary.LittleEndian, uint32(clientLongPassword|clientProtocol41|clientTransactions|clientSecureConn))
	_ = binary.Write(&resp, binary.LittleEndian, uint32(1<<24))
	resp.WriteByte(45) // utf8mb4_general_ci
	resp.Write(make([]byte, 23))
	resp.WriteString("root\x00")
	resp.WriteByte(0) // no authentication data
	if err := s.write(resp.Bytes()); err != nil {
		return err
	}
	for {
		p, err := s.read()
		switch {
		case err != nil:
			return err
		case len(p) == 0:
			return errors.New("empty packet at login")
		case p[0] == 0x00:
			return nil
		case p[0] == 0xff:
			return errorPacket(p)
		case p[0] == 0xfe: // switch the authentication method: the password is still empty
			if err := s.write(nil); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected packet 0x%02x at login", p[0])
		}
	}
}

// lenenc reads a length-encoded integer from p; null says 0xfb (NULL) was read.
func lenenc(p []byte) (v uint64, n int, null bool) {
	if len(p) == 0 {
		return 0, 0, false
	}
	switch p[0] {
	case 0xfb:
		return 0, 1, true
	case 0xfc:
		if len(p) >= 3 {
			return uint64(binary.LittleEndian.Uint16(p[1:])), 3, false
		}
	case 0xfd:
		if len(p) >= 4 {
			return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, 4, false
		}
	case 0xfe:
		if len(p) >= 9 {
			return binary.LittleEndian.Uint64(p[1:]), 9, false
		}
	default:
		return uint64(p[0]), 1, false
	}
	return 0, len(p) + 1, false // too short: the caller sees n past the end
}

// eof tells whether p is an EOF packet, which ends column definitions and rows.
func eof(p []byte) bool { return len(p) > 0 && p[0] == 0xfe && len(p) < 9 }

// query runs one statement and returns its rows, each column a string ("" for NULL).
func (s *session) query(sql string) ([][]string, error) {
	s.seq = 0
	if err := s.write(append([]byte{0x03}, sql...)); err != nil {
		return nil, err
	}
	p, err := s.read()
	switch {
	case err != nil:
		return nil, err
	case len(p) == 0:
		return nil, errors.New("empty answer")
	case p[0] == 0x00:
		return nil, nil
	case p[0] == 0xff:
		return nil, errorPacket(p)
	}
	cols, _, _ := lenenc(p)
	for i := uint64(0); i <= cols; i++ { // the column definitions, then an EOF packet
		if p, err = s.read(); err != nil {
			return nil, err
		}
		if p[0] == 0xff {
			return nil, errorPacket(p)
		}
	}
	var rows [][]string
	for {
		if p, err = s.read(); err != nil {
			return nil, err
		}
		switch {
		case eof(p):
			return rows, nil
		case len(p) > 0 && p[0] == 0xff:
			return nil, errorPacket(p)
		}
		row := make([]string, 0, cols)
		for off := 0; uint64(len(row)) < cols; {
			l, n, null := lenenc(p[off:])
			off += n
			if null {
				row = append(row, "")
				continue
			}
			if off+int(l) > len(p) {
				return nil, errors.New("short row")
			}
			row = append(row, string(p[off:off+int(l)]))
			off += int(l)
		}
		rows = append(rows, row)
	}
}

// quote makes v a string literal of MySQL's (backslash escapes on, as by default).
func quote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`).Replace(v) + "'"
}
