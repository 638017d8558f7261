package memstore

import "time"

// NewPlain is New with every shortcut turned off: the plain computation
// the shortcuts are compared with.
func NewPlain(now func() time.Time) *Store {
	s := New(now)
	s.plain = true
	return s
}

// KeptRecords is how many records the blocks s keeps across a Reset hold.
func (s *Store) KeptRecords() int { return len(s.blocks) * recSlab }

// KeptStreams is how many emptied streams s keeps across a Reset.
func (s *Store) KeptStreams() int { return len(s.spare) }
