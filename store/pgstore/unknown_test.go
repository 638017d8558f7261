// This file proves that a Save whose COMMIT reached the real PostgreSQL
// but whose reply never came back is reported as store.ErrUnknown, and
// that the write is then either wholly in the store or wholly absent. A
// small TCP proxy on loopback stands between the store and the server,
// reads the client's messages, and cuts the connection once it has
// passed a COMMIT on (a simple query, or a pipeline that binds one): after the server's reply arrived (so the write
// certainly committed) or at once (so the outcome is the server's race).
// pgx reports that lost reply as "conn closed", an error that claims
// pgconn.SafeToRetry: the test fails if pgstore ever trusts that claim at
// commit.
package pgstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// commitCutter is a TCP proxy to a PostgreSQL server that, once armed,
// cuts the first connection on which the client sends COMMIT, after
// forwarding it to the server and before the client reads a reply.
type commitCutter struct {
	t              *testing.T
	target         string
	ln             net.Listener
	awaitReply     bool        // cut after the server's reply came (and drop it), not at once
	armed          atomic.Bool // the next COMMIT is cut
	cuts           atomic.Int32
	wg             sync.WaitGroup
	mu             sync.Mutex
	conns          []net.Conn
	repliesDropped atomic.Int32 // replies to a COMMIT that were read and not passed on
}

func newCommitCutter(t *testing.T, target string, awaitReply bool) *commitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitCutter{t: t, target: target, ln: ln, awaitReply: awaitReply}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *commitCutter) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *commitCutter) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			p.t.Errorf("proxy: dialing the server %s: %v", p.target, err)
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.relay(client, server)
	}
}

// relay passes one connection's bytes both ways, cutting it as armed.
func (p *commitCutter) relay(client, server net.Conn) {
	defer p.wg.Done()
	var cutting atomic.Bool // a COMMIT was forwarded: drop what the server says
	replied := make(chan struct{})
	cut := func() { client.Close(); server.Close() }
	p.wg.Add(1)
	go func() { // server to client
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && cutting.Load() {
				p.repliesDropped.Add(1)
				close(replied)
				cut()
				return
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					cut()
					return
				}
			}
			if err != nil {
				cut()
				return
			}
		}
	}()
	// Client to server, message by message.
	if err := p.passStartup(client, server); err != nil {
		cut()
		return
	}
	var commits commitFinder
	for {
		typ, msg, err := readMessage(client)
		if err != nil {
			cut()
			return
		}
		if commits.sent(typ, msg) && p.armed.CompareAndSwap(true, false) {
			p.cuts.Add(1)
			cutting.Store(true)
			if _, err := server.Write(msg); err != nil {
				p.t.Errorf("proxy: forwarding COMMIT: %v", err)
			}
			if p.awaitReply {
				select {
				case <-replied: // the server answered: it committed
				case <-time.After(10 * time.Second):
					p.t.Errorf("proxy: the server did not answer the COMMIT within 10s")
				}
			}
			cut()
			return
		}
		if _, err := server.Write(msg); err != nil {
			cut()
			return
		}
	}
}

// commitFinder finds the message that makes the server run a COMMIT:
// a simple query, or the Sync that ends a pipeline in which a COMMIT was
// bound (pgstore sends its COMMIT with the transaction's last writes, in
// the extended protocol, as a prepared statement).
type commitFinder struct {
	statements map[string]string // prepared statement name → its SQL
	bound      bool              // a COMMIT is bound and waits for the Sync
}

func isCommit(sql string) bool {
	return strings.EqualFold(strings.TrimRight(sql, "\x00; "), "commit")
}

// sent reads one message the client sends and reports whether the
// server runs a COMMIT once it has it.
func (f *commitFinder) sent(typ byte, msg []byte) bool {
	body := msg[5:]
	switch typ {
	case 'Q':
		return isCommit(string(body))
	case 'P': // Parse: statement name, SQL, ...
		parts := strings.SplitN(string(body), "\x00", 3)
		if len(parts) == 3 {
			if f.statements == nil {
				f.statements = map[string]string{}
			}
			f.statements[parts[0]] = parts[1]
		}
	case 'B': // Bind: portal name, statement name, ...
		parts := strings.SplitN(string(body), "\x00", 3)
		if len(parts) == 3 && isCommit(f.statements[parts[1]]) {
			f.bound = true
		}
	case 'S':
		commit := f.bound
		f.bound = false
		return commit
	}
	return false
}

// passStartup forwards the untyped messages that open a connection: an
// SSL or GSS request (answered with one byte, relayed by the other
// direction) and the startup message itself.
func (p *commitCutter) passStartup(client, server net.Conn) error {
	for {
		var head [8]byte
		if _, err := io.ReadFull(client, head[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(head[:4])
		if n < 8 || n > 10000 {
			return fmt.Errorf("proxy: startup message of %d bytes", n)
		}
		rest := make([]byte, n-8)
		if _, err := io.ReadFull(client, rest); err != nil {
			return err
		}
		if _, err := server.Write(append(head[:], rest...)); err != nil {
			return err
		}
		code := binary.BigEndian.Uint32(head[4:])
		if code != 80877103 && code != 80877104 { // not SSLRequest or GSSENCRequest
			return nil
		}
	}
}

// readMessage reads one typed frontend message whole.
func readMessage(r io.Reader) (byte, []byte, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("proxy: message %q of %d bytes", head[0], n)
	}
	msg := make([]byte, 1+n)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return head[0], msg, nil
}

// serverAddr is the host:port conn names.
func serverAddr(t *testing.T, conn string) string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(conn)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// viaProxy returns conn with its host and port replaced by addr.
func viaProxy(t *testing.T, conn, addr string) string {
	t.Helper()
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = addr
		return u.String()
	}
	host, port, _ := net.SplitHostPort(addr)
	return conn + " host=" + host + " port=" + port // later keywords win
}

// TestLostCommitReplyIsUnknown: a two-record Save whose COMMIT the
// server received but whose reply was lost returns store.ErrUnknown (not
// nil, not ErrUnavailable), and re-reading shows both updates or
// neither; when the proxy waited for the server's reply, both.
func TestLostCommitReplyIsUnknown(t *testing.T) {
	for _, c := range []struct {
		name       string
		awaitReply bool
	}{
		{"reply-dropped", true},
		{"cut-at-once", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := server(t)
			p := newCommitCutter(t, serverAddr(t, conn), c.awaitReply)
			lostCommit(t, p, viaProxy(t, conn, p.ln.Addr().String()), c.awaitReply)
		})
	}
}

func lostCommit(t *testing.T, p *commitCutter, proxied string, mustHaveCommitted bool) {
	ctx := t.Context()
	s, err := Open(ctx, proxied, Options{Schema: freshSchema(t, server(t)), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"e1", "e2"} {
		if _, _, err := s.Enqueue(ctx, "s", id, []byte("payload "+id)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Acquire(ctx, "s", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	next := time.Now().Add(time.Hour)
	ups := []store.Update{
		{ID: "e1", Delivery: store.Delivery{State: machine.Retry, Attempts: 1, NextAt: next}, Outcome: &store.Outcome{Attempt: 1, Status: 503}},
		{ID: "e2", Delivery: store.Delivery{State: machine.Retry, Attempts: 1, NextAt: next}, Outcome: &store.Outcome{Attempt: 1, Status: 503}},
	}

	p.armed.Store(true)
	saveErr := s.Save(ctx, l, ups)
	err = saveErr
	if got := p.cuts.Load(); got != 1 {
		t.Fatalf("the proxy cut %d connections at a COMMIT, want 1 (Save: %v)", got, err)
	}
	if !errors.Is(err, store.ErrUnknown) {
		t.Errorf("Save with its COMMIT reply lost = %v, want an error that is store.ErrUnknown", err)
	}
	if errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Save with its COMMIT reply lost = %v, must not be store.ErrUnavailable (the write may have happened)", err)
	}
	if mustHaveCommitted && p.repliesDropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d COMMIT replies, want 1", p.repliesDropped.Load())
	}

	// Re-read through the proxy, on a new connection: the store recovers.
	// Both records in one statement, one snapshot: the server may still be
	// committing when the connection was cut at once, and two Gets could
	// fall on either side of the moment the commit becomes visible.
	var attempts []int
	rows, err := s.pool.Query(ctx, `SELECT attempts FROM deliveries WHERE id IN ('e1', 'e2') ORDER BY id`)
	if err != nil {
		t.Fatalf("reading the attempts after the lost reply: %v", err)
	}
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, n)
	}
	if rows.Close(); rows.Err() != nil || len(attempts) != 2 {
		t.Fatalf("reading the attempts after the lost reply: %v rows, %v", len(attempts), rows.Err())
	}
	for _, id := range []string{"e1", "e2"} {
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get %s after the lost reply: %v", id, err)
		}
		if r.Attempts == 1 && (r.State != machine.Retry || r.Last.Status != 503) {
			t.Errorf("%s after the lost reply = state %v, last status %d; want the whole update (Retry, 503)", id, r.State, r.Last.Status)
		}
	}
	switch {
	case attempts[0] != attempts[1]:
		t.Errorf("attempts after the lost reply = %v: one update is in and one is not", attempts)
	case mustHaveCommitted && attempts[0] != 1:
		t.Errorf("attempts after a lost reply to a COMMIT the server answered = %v, want [1 1]", attempts)
	}
	t.Logf("Save: %v; attempts read back: %v", saveErr, attempts)
}
