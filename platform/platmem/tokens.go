package platmem

import (
	"context"
	"fmt"

	"github.com/courierlab/courier/platform"
)

func (s *Store) CreateToken(ctx context.Context, t platform.AppToken) (platform.AppToken, error) {
	if err := platform.CheckToken(t); err != nil {
		return platform.AppToken{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.AppToken{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[t.AppID]; !ok {
		return platform.AppToken{}, notFound("application", t.AppID)
	}
	n := 0
	for _, x := range s.tokens {
		switch {
		case x.ID == t.ID:
			return platform.AppToken{}, fmt.Errorf("%w: token %q exists", platform.ErrConflict, t.ID)
		case x.Hash == t.Hash:
			return platform.AppToken{}, fmt.Errorf("%w: a token with that hash exists", platform.ErrConflict)
		case x.AppID == t.AppID:
			n++
		}
	}
	if n >= platform.MaxTokensPerApp {
		return platform.AppToken{}, fmt.Errorf("%w: application %q has %d tokens, the most it may have", platform.ErrConflict, t.AppID, n)
	}
	t.CreatedAt = s.clock()
	s.tokens[t.ID] = t
	return t, nil
}

func (s *Store) ListTokens(ctx context.Context, app, after string, limit int) ([]platform.AppToken, error) {
	if err := platform.CheckPage(platform.TokenKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[app]; !ok {
		return nil, notFound("application", app)
	}
	return page(s.tokens, after, limit, func(t platform.AppToken) bool { return t.AppID == app }), nil
}

func (s *Store) DeleteToken(ctx context.Context, app, id string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; !ok || t.AppID != app {
		return notFound("token", id)
	}
	delete(s.tokens, id)
	return nil
}

func (s *Store) TokenByHash(ctx context.Context, hash string) (platform.AppToken, error) {
	if err := s.lock(ctx); err != nil {
		return platform.AppToken{}, err
	}
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		if t.Hash == hash {
			return t, nil
		}
	}
	return platform.AppToken{}, notFound("token", "with that hash")
}
