package sqlsim

import (
	"context"
	"time"

	"github.com/courierlab/courier/store"
)

// The writes, each refused while the injected outage lasts, before it
// reaches SQLite (reads are never refused: memstore's SetUnavailable).

func (s *Store) Enqueue(ctx context.Context, stream, id string, payload []byte) (store.Record, bool, error) {
	if err := s.refused("enqueue"); err != nil {
		return store.Record{}, false, err
	}
	return s.Store.Enqueue(ctx, stream, id, payload)
}

func (s *Store) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	if err := s.refused("claim"); err != nil {
		return nil, err
	}
	return s.Store.ClaimDue(ctx, owner, ttl, max)
}

func (s *Store) Acquire(ctx context.Context, stream, owner string, ttl time.Duration) (store.Lease, error) {
	if err := s.refused("acquire"); err != nil {
		return store.Lease{}, err
	}
	return s.Store.Acquire(ctx, stream, owner, ttl)
}

func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.refused("renew"); err != nil {
		return store.Lease{}, err
	}
	return s.Store.Renew(ctx, l, ttl)
}

func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.refused("release"); err != nil {
		return err
	}
	return s.Store.Release(ctx, l)
}

func (s *Store) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	if err := s.refused("save"); err != nil {
		return err
	}
	return s.Store.Save(ctx, l, ups)
}

func (s *Store) Replay(ctx context.Context, id, by string) (store.Record, error) {
	if err := s.refused("replay"); err != nil {
		return store.Record{}, err
	}
	return s.Store.Replay(ctx, id, by)
}

func (s *Store) Discard(ctx context.Context, id, by string) (store.Record, error) {
	if err := s.refused("discard"); err != nil {
		return store.Record{}, err
	}
	return s.Store.Discard(ctx, id, by)
}

func (s *Store) DeleteSettled(ctx context.Context, retention time.Duration, limit int) (int, error) {
	if err := s.refused("delete"); err != nil {
		return 0, err
	}
	return s.Store.DeleteSettled(ctx, retention, limit)
}

func (s *Store) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	if err := s.refused("release until"); err != nil {
		return err
	}
	return s.Store.ReleaseUntil(ctx, l, until)
}
