package platformtest

import (
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
)

// endpointOldSecrets: an endpoint's old secrets (a rotation) are kept
// whole by create and update, their expiries to the microsecond; a bad
// one names its field and changes nothing.
func endpointOldSecrets(e *env) {
	a := e.app("a")
	ep := e.endpoint(a.ID)
	ep.EventTypes = []string{}
	ep.OldSecrets = []platform.OldSecret{{Secret: webhook.NewSecret(), ExpiresAt: e.at.Add(time.Hour + 789*time.Nanosecond)}}
	got := e.create(ep)
	want := ep
	want.OldSecrets = []platform.OldSecret{{Secret: ep.OldSecrets[0].Secret, ExpiresAt: e.at.Add(time.Hour).Truncate(time.Microsecond)}}
	want.CreatedAt, want.UpdatedAt = e.now(), e.now()
	diff(e.t, "CreateEndpoint with an old secret", want, got)

	e.tick(time.Minute)
	fresh := webhook.NewSecret()
	rotated, err := platform.Rotate(got, fresh, e.at.Add(24*time.Hour), e.at)
	if err != nil {
		e.t.Fatal(err)
	}
	got, err = e.s.UpdateEndpoint(e.ctx, rotated)
	if err != nil {
		e.t.Fatal(err)
	}
	want = rotated
	want.UpdatedAt = e.now()
	diff(e.t, "UpdateEndpoint after Rotate", want, got)
	read, _ := e.s.GetEndpoint(e.ctx, ep.ID)
	diff(e.t, "GetEndpoint after Rotate", want, read)
	if len(read.OldSecrets) != 2 || read.Secrets[0] != fresh {
		e.t.Errorf("after a rotation: secrets %d, old %d; want the new one and two old", len(read.Secrets), len(read.OldSecrets))
	}

	for _, c := range []struct {
		name  string
		old   []platform.OldSecret
		field string
	}{
		{"not-a-secret", []platform.OldSecret{{Secret: "hunter2", ExpiresAt: e.at}}, "old_secrets[0].secret"},
		{"no-expiry", []platform.OldSecret{{Secret: secret}, {Secret: secret}}, "old_secrets[0].expires_at"},
		{"too-many", make([]platform.OldSecret, webhook.MaxSigners), "old_secrets"},
	} {
		bad := read
		bad.OldSecrets = c.old
		_, err := e.s.UpdateEndpoint(e.ctx, bad)
		e.wantField("UpdateEndpoint "+c.name, err, c.field)
	}
	after, _ := e.s.GetEndpoint(e.ctx, ep.ID)
	diff(e.t, "GetEndpoint after refused updates", want, after)
}
