package vicitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/strongswan/govici/vici"
)

// VICI's packet types and message elements (strongSwan's
// src/libcharon/plugins/vici/README.md), which govici does not export.
const (
	pktCmdRequest      = 0
	pktCmdResponse     = 1
	pktEventRegister   = 3
	pktEventUnregister = 4
	pktEventConfirm    = 5
	pktEvent           = 7

	elSectionStart = 1
	elSectionEnd   = 2
	elKeyValue     = 3
	elListStart    = 4
	elListItem     = 5
	elListEnd      = 6
)

// A Reply is a Server's answer to a command: Events, each sent as an event
// named Event to the connection if it registered for it, then the
// response Out (nil: an empty one, which govici takes as success).
type Reply struct {
	Event  string
	Events []*vici.Message
	Out    *vici.Message
}

// A Command is a command a Server received.
type Command struct {
	Name string
	In   *vici.Message
}

// A Server stands in for charon's VICI socket in the agent's unit tests:
// it speaks VICI's wire protocol on a Unix socket, as strict as charon
// about framing (a malformed packet fails the test), confirms every event
// registration, answers every command with Handle's Reply and records the
// commands in order. Drop closes every connection, as a restarted charon.
type Server struct {
	// Handle answers a command; nil answers every one with an empty
	// response. It runs on the connection's goroutine.
	Handle func(cmd string, in *vici.Message) Reply

	t      testing.TB
	socket string
	ln     net.Listener

	mu       sync.Mutex
	commands []Command
	conns    map[net.Conn]bool
	raise    func(event string) []*vici.Message
	wg       sync.WaitGroup
}

// RaiseOnRegister makes the server send the events raise returns for an
// event to a connection that registers for it, after taking the
// registration and before confirming it. charon does so when another
// thread raises the event in between: its register_event adds the client,
// unlocks, and only then sends the confirmation. nil sends none.
func (s *Server) RaiseOnRegister(raise func(event string) []*vici.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raise = raise
}

// Serve starts a Server with handle on a socket in a directory of its own,
// which t's cleanup removes with the server's connections.
func Serve(t testing.TB, handle func(cmd string, in *vici.Message) Reply) *Server {
	t.Helper()
	// Not t.TempDir: a Unix socket's path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "vici")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handle: handle, t: t, socket: filepath.Join(dir, "charon.vici"), conns: map[net.Conn]bool{}}
	if s.ln, err = (&net.ListenConfig{}).Listen(context.Background(), "unix", s.socket); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.ln.Close()
		s.Drop()
		s.wg.Wait()
		_ = os.RemoveAll(dir)
	})
	s.wg.Add(1)
	go s.accept()
	return s
}

// Socket is the path of the server's socket.
func (s *Server) Socket() string { return s.socket }

// Commands returns the commands received so far, in order.
func (s *Server) Commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// Drop closes every connection the server has; it keeps accepting new
// ones.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve answers the packets of connection c until it ends.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	registered := map[string]bool{}
	for {
		typ, name, body, err := readPacket(r)
		if err != nil {
			// A client that closes with packets unread resets the
			// connection: an end, as for charon.
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
				s.t.Errorf("vicitest: cannot read a packet: %v", err)
			}
			return
		}
		switch typ {
		case pktEventRegister, pktEventUnregister:
			registered[name] = typ == pktEventRegister
			err = s.confirm(c, typ == pktEventRegister, name)
		case pktCmdRequest:
			in, derr := decode(body)
			if derr != nil {
				s.t.Errorf("vicitest: cannot decode the %s request: %v", name, derr)
				return
			}
			s.mu.Lock()
			s.commands = append(s.commands, Command{Name: name, In: in})
			s.mu.Unlock()
			var rep Reply
			if s.Handle != nil {
				rep = s.Handle(name, in)
			}
			for _, e := range rep.Events {
				if err == nil && registered[rep.Event] {
					err = writePacket(c, pktEvent, rep.Event, e)
				}
			}
			if err == nil {
				err = writePacket(c, pktCmdResponse, "", rep.Out)
			}
		default:
			s.t.Errorf("vicitest: a client sent packet type %d", typ)
			return
		}
		if err != nil {
			return // the connection was dropped
		}
	}
}

// confirm confirms a registration (register) or unregistration for event
// on c, after the events RaiseOnRegister's function gives for a
// registration.
func (s *Server) confirm(c net.Conn, register bool, event string) error {
	s.mu.Lock()
	raise := s.raise
	s.mu.Unlock()
	if raise != nil && register {
		for _, e := range raise(event) {
			if err := writePacket(c, pktEvent, event, e); err != nil {
				return err
			}
		}
	}
	return writePacket(c, pktEventConfirm, "", nil)
}

// readPacket reads one packet: its type, its name (for the named types)
// and its message.
func readPacket(r io.Reader) (typ byte, name string, body []byte, err error) {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return 0, "", nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, "", nil, err
	}
	if len(p) == 0 {
		return 0, "", nil, errors.New("empty packet")
	}
	typ, p = p[0], p[1:]
	if typ == pktCmdRequest || typ == pktEventRegister || typ == pktEventUnregister {
		if len(p) == 0 || len(p) < 1+int(p[0]) {
			return 0, "", nil, errors.New("short packet name")
		}
		name, p = string(p[1:1+p[0]]), p[1+p[0]:]
	}
	return typ, name, p, nil
}

// writePacket writes a packet of type typ, with name if not empty, and m.
func writePacket(w io.Writer, typ byte, name string, m *vici.Message) error {
	var b bytes.Buffer
	b.WriteByte(typ)
	if name != "" {
		writeName(&b, name)
	}
	if m != nil {
		encode(&b, m)
	}
	p := binary.BigEndian.AppendUint32(nil, uint32(b.Len())) //nolint:gosec // G115: a test's small packet
	_, err := w.Write(append(p, b.Bytes()...))
	return err
}

// encode appends m's elements to b.
func encode(b *bytes.Buffer, m *vici.Message) {
	for _, k := range m.Keys() {
		switch v := m.Get(k).(type) {
		case string:
			b.WriteByte(elKeyValue)
			writeName(b, k)
			value(b, v)
		case []string:
			b.WriteByte(elListStart)
			writeName(b, k)
			for _, x := range v {
				b.WriteByte(elListItem)
				value(b, x)
			}
			b.WriteByte(elListEnd)
		case *vici.Message:
			b.WriteByte(elSectionStart)
			writeName(b, k)
			encode(b, v)
			b.WriteByte(elSectionEnd)
		}
	}
}

// writeName appends a name, a byte of length and the bytes.
func writeName(b *bytes.Buffer, k string) {
	b.WriteByte(byte(len(k))) //nolint:gosec // G115: a test's short name
	b.WriteString(k)
}

// value appends a value, two bytes of length and the bytes.
func value(b *bytes.Buffer, v string) {
	_ = binary.Write(b, binary.BigEndian, uint16(len(v))) //nolint:gosec // G115: a test's short value
	b.WriteString(v)
}

// decode returns the message of a packet's body.
func decode(p []byte) (*vici.Message, error) {
	d := decoder{p: p}
	return d.section(true)
}

type decoder struct{ p []byte }

// section decodes elements up to a section's end, or the message's for
// the top level.
func (d *decoder) section(top bool) (*vici.Message, error) {
	m := vici.NewMessage()
	for len(d.p) > 0 {
		el := d.p[0]
		d.p = d.p[1:]
		if el == elSectionEnd {
			if top {
				return nil, errors.New("a section end outside any section")
			}
			return m, nil
		}
		k, err := d.bytes(1)
		if err != nil {
			return nil, err
		}
		var v any
		switch el {
		case elKeyValue:
			b, err := d.bytes(2)
			if err != nil {
				return nil, err
			}
			v = string(b)
		case elListStart:
			if v, err = d.list(); err != nil {
				return nil, err
			}
		case elSectionStart:
			if v, err = d.section(false); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown element %d", el)
		}
		if err := m.Set(string(k), v); err != nil {
			return nil, err
		}
	}
	if !top {
		return nil, errors.New("a section without its end")
	}
	return m, nil
}

// list decodes a list's items and its end.
func (d *decoder) list() ([]string, error) {
	var l []string
	for len(d.p) > 0 && d.p[0] == elListItem {
		d.p = d.p[1:]
		b, err := d.bytes(2)
		if err != nil {
			return nil, err
		}
		l = append(l, string(b))
	}
	if len(d.p) == 0 || d.p[0] != elListEnd {
		return nil, errors.New("a list without its end")
	}
	d.p = d.p[1:]
	return l, nil
}

// bytes reads a length of size bytes (1 or 2, big-endian) and that many
// bytes.
func (d *decoder) bytes(size int) ([]byte, error) {
	if len(d.p) < size {
		return nil, errors.New("short length")
	}
	n := int(d.p[0])
	if size == 2 {
		n = int(binary.BigEndian.Uint16(d.p))
	}
	if len(d.p) < size+n {
		return nil, errors.New("short value")
	}
	b := d.p[size : size+n]
	d.p = d.p[size+n:]
	return b, nil
}
