package platmem

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/platform"
)

func (s *Store) AddMissing(ctx context.Context, app, ep string, since time.Time, limit int) ([]platform.Message, error) {
	if err := platform.CheckMissing(since, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, ok := s.endpoints[ep]
	if !ok || e.AppID != app {
		return nil, notFound("endpoint", ep)
	}
	chosen := page(s.messages, "", len(s.messages), func(m platform.Message) bool {
		return m.AppID == app && (!m.CreatedAt.Before(since) || plant.On(plant.MissingIgnoresSince)) && e.Subscribes(m.EventType) &&
			!slices.ContainsFunc(m.Fanout, func(f platform.Fanout) bool { return f.EndpointID == ep })
	})
	out := []platform.Message{}
	for _, m := range chosen[:min(limit, len(chosen))] {
		f := platform.Fanout{EndpointID: ep, DeliveryID: platform.DeliveryID(m.ID, ep), Stream: platform.StreamOf(ep), State: platform.Pending}
		i, _ := slices.BinarySearchFunc(m.Fanout, ep, func(f platform.Fanout, id string) int { return strings.Compare(f.EndpointID, id) })
		m.Fanout = slices.Insert(slices.Clone(m.Fanout), i, f) // copies handed out share no memory with the map's
		s.messages[m.ID] = m
		out = append(out, copyMessage(m))
	}
	return out, nil
}
