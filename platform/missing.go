package platform

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
)

// Subscribes reports whether the endpoint's filter takes messages of
// eventType (empty, or naming the type), enabled or not: what a replay of
// missing messages goes by (Store.AddMissing), where a fan-out goes by
// Wants.
func (e Endpoint) Subscribes(eventType string) bool {
	return len(e.EventTypes) == 0 || slices.Contains(e.EventTypes, eventType) || plant.On(plant.FilterIgnored)
}

// CheckMissing checks the arguments of Store.AddMissing but the IDs
// (a malformed one is simply not found).
func CheckMissing(since time.Time, limit int) error {
	if since.IsZero() {
		return fieldErr("since", "is missing; give the instant from which messages are replayed")
	}
	if limit < 1 || limit > MaxLimit {
		return fieldErr("limit", "is %d; must be within 1..%d", limit, MaxLimit)
	}
	return nil
}

// missingPage is how many messages ReplayMissing adds to an endpoint in
// one transaction.
const missingPage = 100

// ReplayMissing gives endpoint ep of application app a delivery of every
// message of app created at or after since that its filter subscribes to
// and that it has none of yet (an endpoint created, or subscribed,
// after those messages were published), and fans each out as Publish
// does: a delivery's identity is (message, endpoint), its webhook-id
// DeliveryID(message, endpoint). Asking again adds nothing, since every
// message then has its entry. The messages go oldest first (ID order).
//
// added counts the deliveries added; pending those of them whose
// enqueue failed and that Run's re-drive will finish. ErrNotFound if the
// application has no such endpoint.
func (s *Service) ReplayMissing(ctx context.Context, app, ep string, since time.Time) (added, pending int, err error) {
	for {
		page, err := s.cfg.Store.AddMissing(ctx, app, ep, since, missingPage)
		if err != nil {
			return added, pending, err
		}
		var first error
		for _, m := range page {
			m, err := s.drive(ctx, m)
			first = cmp.Or(first, err)
			added++
			if i := slices.IndexFunc(m.Fanout, func(f Fanout) bool { return f.EndpointID == ep }); i >= 0 && m.Fanout[i].State == Pending {
				pending++
			}
		}
		if first != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "replay of missing messages: fan-out unfinished; the re-drive will finish it",
				slog.String("endpoint", ep), slog.Any("err", first))
		}
		if len(page) < missingPage {
			return added, pending, nil
		}
	}
}
