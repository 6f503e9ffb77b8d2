package server

import (
	"net"
	"sync"
)

// LimitConnections returns ln holding at most n connections open at once
// (0: no bound): one accepted beyond them is closed at once, so that
// connections (each a descriptor, buffers and a goroutine, taken before
// any key is checked) cannot be opened until the process runs out of
// descriptors, which would fail its sandboxes too. Refusing new
// connections, rather than waiting to accept them, keeps the backlog from
// hiding the refusal. refused, if set, is called for each one closed so.
func LimitConnections(ln net.Listener, n int, refused func()) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limitedListener{Listener: ln, max: n, refused: refused}
}

type limitedListener struct {
	net.Listener
	max     int
	refused func()

	mu   sync.Mutex
	open int
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.max
		if !full {
			l.open++
		}
		l.mu.Unlock()
		if full {
			c.Close()
			if l.refused != nil {
				l.refused()
			}
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn gives its place back when it is closed.
type countedConn struct {
	net.Conn
	l    *limitedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

// CloseWrite half-closes the connection, as net/http does before closing
// one whose request it did not read whole (so that the client reads the
// answer rather than a reset).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
