package platmem

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

func (s *Store) RecordAttempt(ctx context.Context, a platform.Attempt) (platform.EndpointHealth, error) {
	if err := platform.CheckAttempt(a); err != nil {
		return platform.EndpointHealth{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.EndpointHealth{}, err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[a.EndpointID]; !ok || e.AppID != a.AppID {
		return platform.EndpointHealth{}, notFound("endpoint", a.EndpointID)
	}
	if _, ok := s.attempts[a.ID]; ok {
		return platform.EndpointHealth{}, fmt.Errorf("%w: attempt %q exists", platform.ErrConflict, a.ID)
	}
	a = platform.CleanAttempt(a)
	s.attempts[a.ID] = a
	h := s.healthOf(a.AppID, a.EndpointID).Note(a)
	s.health[a.EndpointID] = h
	return h, nil
}

// healthOf is the endpoint's health, the zero one if none; s.mu is held.
func (s *Store) healthOf(app, ep string) platform.EndpointHealth {
	if h, ok := s.health[ep]; ok {
		return h
	}
	return platform.EndpointHealth{EndpointID: ep, AppID: app}
}

// forgetAttempts deletes the attempts gone says are; s.mu is held.
func (s *Store) forgetAttempts(gone func(platform.Attempt) bool) {
	for k, a := range s.attempts {
		if gone(a) {
			delete(s.attempts, k)
		}
	}
}

// attemptsPage lists up to limit attempts that keep says are, newest
// first, after after in that order; s.mu is held.
func (s *Store) attemptsPage(after string, limit int, keep func(platform.Attempt) bool) []platform.Attempt {
	var ids []string
	for id, a := range s.attempts {
		if (after == "" || id < after) && keep(a) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) })
	out := []platform.Attempt{}
	for _, id := range ids[:min(limit, len(ids))] {
		out = append(out, platform.CleanAttempt(s.attempts[id])) // a copy
	}
	return out
}

func (s *Store) ListMessageAttempts(ctx context.Context, app, msg, after string, limit int) ([]platform.Attempt, error) {
	if err := platform.CheckPage(platform.AttemptKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if m, ok := s.messages[msg]; !ok || m.AppID != app {
		return nil, notFound("message", msg)
	}
	return s.attemptsPage(after, limit, func(a platform.Attempt) bool { return a.MessageID == msg && a.AppID == app }), nil
}

func (s *Store) ListEndpointAttempts(ctx context.Context, app, ep, after string, limit int) ([]platform.Attempt, error) {
	if err := platform.CheckPage(platform.AttemptKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[ep]; !ok || e.AppID != app {
		return nil, notFound("endpoint", ep)
	}
	return s.attemptsPage(after, limit, func(a platform.Attempt) bool { return a.EndpointID == ep }), nil
}

func (s *Store) DeleteAttemptsBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	if limit < 1 || limit > platform.MaxLimit {
		return 0, &platform.FieldError{Field: "limit", Why: fmt.Sprintf("is %d; must be within [1, %d]", limit, platform.MaxLimit)}
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var old []platform.Attempt
	for _, a := range s.attempts {
		if a.At.Before(t) {
			old = append(old, a)
		}
	}
	// Ties by ID: with equal instants, map order must not choose which
	// attempts a page deletes.
	slices.SortFunc(old, func(a, b platform.Attempt) int { return cmp.Or(a.At.Compare(b.At), strings.Compare(a.ID, b.ID)) })
	for _, a := range old[:min(limit, len(old))] {
		delete(s.attempts, a.ID)
	}
	return min(limit, len(old)), nil
}

func (s *Store) GetHealth(ctx context.Context, app, ep string) (platform.EndpointHealth, error) {
	if err := s.lock(ctx); err != nil {
		return platform.EndpointHealth{}, err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[ep]; !ok || e.AppID != app {
		return platform.EndpointHealth{}, notFound("endpoint", ep)
	}
	return s.healthOf(app, ep), nil
}

func (s *Store) DisableEndpoint(ctx context.Context, app, ep, reason string) (platform.Endpoint, bool, error) {
	if err := platform.CheckDisableReason(reason); err != nil {
		return platform.Endpoint{}, false, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Endpoint{}, false, err
	}
	defer s.mu.Unlock()
	e, ok := s.endpoints[ep]
	if !ok || e.AppID != app {
		return platform.Endpoint{}, false, notFound("endpoint", ep)
	}
	if !e.Enabled {
		return copyEndpoint(e), false, nil
	}
	now := s.clock()
	e.Enabled, e.UpdatedAt = false, now
	s.endpoints[ep] = e
	h := s.healthOf(app, ep)
	h.DisabledReason, h.DisabledAt = reason, now
	s.health[ep] = h
	return copyEndpoint(e), true, nil
}
