package sqlsim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/sqlitestore"
)

// The simulator's calls never time out: the store's own failures are
// injected.
var bg = context.Background()

// New returns a sim.NewStore that makes each run its own SQLite database
// in a new directory under dir ("" is os.TempDir()). A tmpfs such as
// /dev/shm makes the runs much faster: the store syncs every commit.
func New(dir string) sim.NewStore {
	return func(now func() time.Time) (sim.Store, error) {
		tmp, err := os.MkdirTemp(dir, "courier-sim-")
		if err != nil {
			return nil, fmt.Errorf("sqlsim: %w", err)
		}
		s, err := open(filepath.Join(tmp, "courier.db"), now)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		s.dir = tmp
		return s, nil
	}
}

// Store is a sqlitestore.Store with the reads and the outage injection
// the simulator needs (sim.Store).
type Store struct {
	*sqlitestore.Store
	read        *sql.DB // a read-only connection to the same file
	dir         string
	unavailable func() bool
}

var _ sim.Store = (*Store)(nil)

func open(path string, now func() time.Time) (*Store, error) {
	st, err := sqlitestore.Open(bg, path, sqlitestore.Options{Now: now, Readers: 1})
	if err != nil {
		return nil, fmt.Errorf("sqlsim: %w", err)
	}
	read, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("sqlsim: %w", err)
	}
	read.SetMaxOpenConns(1)
	return &Store{Store: st, read: read}, nil
}

// Close closes the database and deletes its files.
func (s *Store) Close() error {
	err := errors.Join(s.read.Close(), s.Store.Close())
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// Resolution is how finely the store keeps instants: SQLite keeps
// microseconds (sqlcore), so a NextAt read back may be up to this much
// earlier than the one persisted (see sim.Store).
func (s *Store) Resolution() time.Duration { return time.Microsecond }

// SetUnavailable implements sim.Store.
func (s *Store) SetUnavailable(f func() bool) { s.unavailable = f }

// refused is the injected outage's error for a write, or nil.
func (s *Store) refused(op string) error {
	if s.unavailable != nil && s.unavailable() {
		return fmt.Errorf("%w: %s refused by failure injection", store.ErrUnavailable, op)
	}
	return nil
}

// must panics on an error of the simulator's own reads: the file is
// private to the run, so a failed read is a broken harness, not a fault
// the run models.
func must(err error, what string) {
	if err != nil {
		panic(fmt.Sprintf("sqlsim: %s: %v", what, err))
	}
}

// Records implements sim.Store: every record of stream, in Seq order.
func (s *Store) Records(stream string) []machine.Record {
	rows, err := s.read.QueryContext(bg, `SELECT id FROM deliveries WHERE stream = ? ORDER BY seq`, stream)
	must(err, "reading the records")
	var ids []string
	for rows.Next() {
		var id string
		must(rows.Scan(&id), "reading the records")
		ids = append(ids, id)
	}
	must(rows.Err(), "reading the records")
	rows.Close()
	out := make([]machine.Record, 0, len(ids))
	for _, id := range ids {
		r, err := s.Get(bg, id)
		must(err, "reading record "+id)
		out = append(out, r.Machine())
	}
	return out
}

// StateCounts implements sim.Store.
func (s *Store) StateCounts(stream string) [machine.Dead + 1]int {
	var n [machine.Dead + 1]int
	rows, err := s.read.QueryContext(bg, `SELECT state, count(*) FROM deliveries WHERE stream = ? GROUP BY state`, stream)
	must(err, "counting states")
	defer rows.Close()
	for rows.Next() {
		var st, c int
		must(rows.Scan(&st, &c), "counting states")
		if st < 0 || st > int(machine.Dead) {
			panic(fmt.Sprintf("sqlsim: state %d in stream %q is not a machine state", st, stream))
		}
		n[st] = c
	}
	must(rows.Err(), "counting states")
	return n
}

// State implements sim.Store.
func (s *Store) State(id string) (machine.State, bool) {
	var st int
	err := s.read.QueryRowContext(bg, `SELECT state FROM deliveries WHERE id = ?`, id).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false
	}
	must(err, "reading a state")
	return machine.State(st), true
}
