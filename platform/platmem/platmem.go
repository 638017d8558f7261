package platmem

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/courierlab/courier/platform"
)

// Store is a platform.Store in memory. The zero value is not usable;
// call New.
type Store struct {
	now func() time.Time

	mu        sync.Mutex
	apps      map[string]platform.Application
	endpoints map[string]platform.Endpoint
	types     map[string]platform.EventType
	messages  map[string]platform.Message
	keys      map[string]string // app + "\x00" + idempotency key -> message ID
	attempts  map[string]platform.Attempt
	health    map[string]platform.EndpointHealth // by endpoint ID
	jobs      map[string]platform.ReplayJob      // bulk replay jobs by ID (jobs.go)
	tokens    map[string]platform.AppToken       // by token ID
}

var _ platform.Store = (*Store)(nil)

// New returns an empty store whose clock is now (nil: time.Now).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, apps: map[string]platform.Application{}, endpoints: map[string]platform.Endpoint{},
		types: map[string]platform.EventType{}, messages: map[string]platform.Message{}, keys: map[string]string{},
		attempts: map[string]platform.Attempt{}, health: map[string]platform.EndpointHealth{}, jobs: map[string]platform.ReplayJob{},
		tokens: map[string]platform.AppToken{}}
}

// clock is the store's now, at the microsecond, as the SQL stores keep it.
func (s *Store) clock() time.Time { return s.now().Truncate(time.Microsecond).UTC() }

// lock takes the mutex after checking ctx; the caller unlocks.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	return nil
}

func notFound(what, id string) error { return fmt.Errorf("%w: %s %q", platform.ErrNotFound, what, id) }

func (s *Store) CreateApp(ctx context.Context, a platform.Application) (platform.Application, error) {
	if err := platform.CheckApplication(a); err != nil {
		return platform.Application{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Application{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[a.ID]; ok {
		return platform.Application{}, fmt.Errorf("%w: application %q exists", platform.ErrConflict, a.ID)
	}
	a.CreatedAt = s.clock()
	a.UpdatedAt = a.CreatedAt
	s.apps[a.ID] = a
	return a, nil
}

func (s *Store) GetApp(ctx context.Context, id string) (platform.Application, error) {
	if err := s.lock(ctx); err != nil {
		return platform.Application{}, err
	}
	defer s.mu.Unlock()
	a, ok := s.apps[id]
	if !ok {
		return platform.Application{}, notFound("application", id)
	}
	return a, nil
}

// page returns up to limit values of m with keys above after, in key order.
func page[V any](m map[string]V, after string, limit int, keep func(V) bool) []V {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if k > after && (keep == nil || keep(v)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []V{}
	for _, k := range keys[:min(limit, len(keys))] {
		out = append(out, m[k])
	}
	return out
}

func (s *Store) ListApps(ctx context.Context, after string, limit int) ([]platform.Application, error) {
	if err := platform.CheckPage(platform.AppKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return page(s.apps, after, limit, nil), nil
}

func (s *Store) UpdateApp(ctx context.Context, a platform.Application) (platform.Application, error) {
	if err := platform.CheckApplication(a); err != nil {
		return platform.Application{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Application{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.apps[a.ID]
	if !ok {
		return platform.Application{}, notFound("application", a.ID)
	}
	old.Name, old.UpdatedAt = a.Name, s.clock()
	s.apps[a.ID] = old
	return old, nil
}

func (s *Store) DeleteApp(ctx context.Context, id string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[id]; !ok {
		return notFound("application", id)
	}
	delete(s.apps, id)
	for k, e := range s.endpoints {
		if e.AppID == id {
			delete(s.endpoints, k)
		}
	}
	for k, m := range s.messages {
		if m.AppID == id {
			delete(s.messages, k)
		}
	}
	for k := range s.keys {
		if strings.HasPrefix(k, id+"\x00") {
			delete(s.keys, k)
		}
	}
	s.forgetAttempts(func(a platform.Attempt) bool { return a.AppID == id })
	s.forgetJobs(func(j platform.ReplayJob) bool { return j.AppID == id })
	for k, h := range s.health {
		if h.AppID == id {
			delete(s.health, k)
		}
	}
	for k, t := range s.tokens {
		if t.AppID == id {
			delete(s.tokens, k)
		}
	}
	return nil
}

// checkTypes checks that every type of a filter is known; s.mu is held.
func (s *Store) checkTypes(types []string) error {
	for i, t := range types {
		if _, ok := s.types[t]; !ok {
			return &platform.FieldError{Field: fmt.Sprintf("event_types[%d]", i), Why: fmt.Sprintf("%q is not an event type; create it first", t)}
		}
	}
	return nil
}

// copyEndpoint returns e with slices of its own.
func copyEndpoint(e platform.Endpoint) platform.Endpoint {
	e.EventTypes = slices.Clone(e.EventTypes)
	e.Secrets = slices.Clone(e.Secrets)
	e.RejectStatuses = slices.Clone(e.RejectStatuses) // nil stays nil: the default
	if e.EventTypes == nil {
		e.EventTypes = []string{}
	}
	var old []platform.OldSecret // nil if none, as the SQL stores read it
	for _, o := range e.OldSecrets {
		old = append(old, platform.OldSecret{Secret: o.Secret, ExpiresAt: o.ExpiresAt.Truncate(time.Microsecond).UTC()})
	}
	e.OldSecrets = old
	e.Headers = maps.Clone(e.Headers)
	if len(e.Headers) == 0 {
		e.Headers = nil // as the SQL stores read it
	}
	return e
}

func (s *Store) CreateEndpoint(ctx context.Context, e platform.Endpoint) (platform.Endpoint, error) {
	if err := platform.CheckEndpoint(e); err != nil {
		return platform.Endpoint{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Endpoint{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[e.AppID]; !ok {
		return platform.Endpoint{}, notFound("application", e.AppID)
	}
	if err := s.checkTypes(e.EventTypes); err != nil {
		return platform.Endpoint{}, err
	}
	if _, ok := s.endpoints[e.ID]; ok {
		return platform.Endpoint{}, fmt.Errorf("%w: endpoint %q exists", platform.ErrConflict, e.ID)
	}
	e = copyEndpoint(e)
	e.CreatedAt = s.clock()
	e.UpdatedAt = e.CreatedAt
	s.endpoints[e.ID] = e
	return copyEndpoint(e), nil
}

func (s *Store) GetEndpoint(ctx context.Context, id string) (platform.Endpoint, error) {
	if err := s.lock(ctx); err != nil {
		return platform.Endpoint{}, err
	}
	defer s.mu.Unlock()
	e, ok := s.endpoints[id]
	if !ok {
		return platform.Endpoint{}, notFound("endpoint", id)
	}
	return copyEndpoint(e), nil
}

func (s *Store) ListEndpoints(ctx context.Context, app, after string, limit int) ([]platform.Endpoint, error) {
	if err := platform.CheckPage(platform.EndpointKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[app]; !ok {
		return nil, notFound("application", app)
	}
	out := page(s.endpoints, after, limit, func(e platform.Endpoint) bool { return e.AppID == app })
	for i := range out {
		out[i] = copyEndpoint(out[i])
	}
	return out, nil
}

func (s *Store) UpdateEndpoint(ctx context.Context, e platform.Endpoint) (platform.Endpoint, error) {
	if err := platform.CheckEndpoint(e); err != nil {
		return platform.Endpoint{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Endpoint{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.endpoints[e.ID]
	if !ok || old.AppID != e.AppID {
		return platform.Endpoint{}, notFound("endpoint", e.ID)
	}
	if err := s.checkTypes(e.EventTypes); err != nil {
		return platform.Endpoint{}, err
	}
	e = copyEndpoint(e)
	e.CreatedAt, e.UpdatedAt = old.CreatedAt, s.clock()
	s.endpoints[e.ID] = e
	if h, ok := s.health[e.ID]; ok && e.Enabled && !old.Enabled {
		s.health[e.ID] = h.Reenabled()
	}
	return copyEndpoint(e), nil
}

func (s *Store) DeleteEndpoint(ctx context.Context, app, id string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[id]; !ok || e.AppID != app {
		return notFound("endpoint", id)
	}
	delete(s.endpoints, id)
	delete(s.health, id)
	s.forgetAttempts(func(a platform.Attempt) bool { return a.EndpointID == id })
	s.forgetJobs(func(j platform.ReplayJob) bool { return j.EndpointID == id })
	return nil
}

func (s *Store) CreateEventType(ctx context.Context, t platform.EventType) (platform.EventType, error) {
	if err := platform.CheckEventType(t); err != nil {
		return platform.EventType{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.EventType{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.types[t.Name]; ok {
		return platform.EventType{}, fmt.Errorf("%w: event type %q exists", platform.ErrConflict, t.Name)
	}
	t.CreatedAt = s.clock()
	s.types[t.Name] = t
	return t, nil
}

func (s *Store) ListEventTypes(ctx context.Context, after string, limit int) ([]platform.EventType, error) {
	if err := platform.CheckPage("", after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return page(s.types, after, limit, nil), nil
}

// copyMessage returns m with slices of its own.
func copyMessage(m platform.Message) platform.Message {
	m.Payload = bytes.Clone(m.Payload)
	m.Fanout = slices.Clone(m.Fanout)
	if m.Fanout == nil {
		m.Fanout = []platform.Fanout{}
	}
	return m
}

func (s *Store) CreateMessage(ctx context.Context, m platform.Message) (platform.Message, bool, error) {
	if err := platform.CheckMessage(m); err != nil {
		return platform.Message{}, false, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.Message{}, false, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[m.AppID]; !ok {
		return platform.Message{}, false, notFound("application", m.AppID)
	}
	key := m.AppID + "\x00" + m.IdempotencyKey
	if id, ok := s.keys[key]; ok && m.IdempotencyKey != "" {
		return copyMessage(s.messages[id]), false, nil
	}
	if _, ok := s.messages[m.ID]; ok {
		return platform.Message{}, false, fmt.Errorf("%w: message %q exists", platform.ErrConflict, m.ID)
	}
	m = copyMessage(m)
	m.CreatedAt = s.clock()
	m.Fanout = []platform.Fanout{}
	for _, e := range page(s.endpoints, "", len(s.endpoints), func(e platform.Endpoint) bool { return e.AppID == m.AppID }) {
		if e.Wants(m.EventType) {
			m.Fanout = append(m.Fanout, platform.Fanout{EndpointID: e.ID, DeliveryID: platform.DeliveryID(m.ID, e.ID),
				Stream: platform.StreamOf(e.ID), State: platform.Pending})
		}
	}
	s.messages[m.ID] = m
	if m.IdempotencyKey != "" {
		s.keys[key] = m.ID
	}
	return copyMessage(m), true, nil
}

func (s *Store) GetMessage(ctx context.Context, app, id string) (platform.Message, error) {
	if err := s.lock(ctx); err != nil {
		return platform.Message{}, err
	}
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok || m.AppID != app {
		return platform.Message{}, notFound("message", id)
	}
	return copyMessage(m), nil
}

func (s *Store) ListMessages(ctx context.Context, app string, f platform.MessageFilter, after string, limit int) ([]platform.Message, error) {
	if err := platform.CheckMessageFilter(f, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := s.apps[app]; !ok {
		return nil, notFound("application", app)
	}
	var list []platform.Message
	for id, m := range s.messages {
		if m.AppID == app && (after == "" || id < after) && f.Pass(m) {
			list = append(list, m)
		}
	}
	slices.SortFunc(list, func(a, b platform.Message) int { return strings.Compare(b.ID, a.ID) })
	out := []platform.Message{}
	for _, m := range list[:min(limit, len(list))] {
		out = append(out, copyMessage(m))
	}
	return out, nil
}

func (s *Store) SetFanout(ctx context.Context, msg, endpoint string, state platform.FanoutState, detail string) error {
	detail, err := platform.CheckFanoutMove(state, detail)
	if err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m, ok := s.messages[msg]
	i := slices.IndexFunc(m.Fanout, func(f platform.Fanout) bool { return f.EndpointID == endpoint })
	switch {
	case !ok || i < 0:
		return notFound("fan-out entry", msg+" "+endpoint)
	case m.Fanout[i].State == state:
		return nil
	case m.Fanout[i].State != platform.Pending:
		return fmt.Errorf("%w: %s is %v, not pending", platform.ErrInvalidMove, m.Fanout[i].DeliveryID, m.Fanout[i].State)
	}
	m.Fanout = slices.Clone(m.Fanout) // copies handed out share no memory with the map's
	m.Fanout[i].State, m.Fanout[i].Detail = state, detail
	s.messages[msg] = m
	return nil
}

func (s *Store) Unfinished(ctx context.Context, after string, limit int) ([]platform.Message, error) {
	if err := platform.CheckPage(platform.MessageKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := page(s.messages, after, limit, func(m platform.Message) bool { return !m.Complete() })
	for i := range out {
		out[i] = copyMessage(out[i])
	}
	return out, nil
}
