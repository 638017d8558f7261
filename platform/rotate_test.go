// This file proves Rotate and SigningSecrets: a rotation makes the new
// secret the only one and keeps the old ones signing until their expiry;
// expired ones stop signing and are dropped at the next rotation; a bad
// rotation names its field.
package platform

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/webhook"
)

func TestRotateKeepsOldSecretsSigningUntilTheyExpire(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	s1, s2, s3 := webhook.NewSecret(), webhook.NewSecret(), webhook.NewSecret()
	e := Endpoint{Secrets: []string{s1}}
	e, err := Rotate(e, s2, now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	got, until := e.SigningSecrets(now)
	if d := cmp.Diff([]string{s2, s1}, got); d != "" || !until.Equal(now.Add(time.Hour)) {
		t.Errorf("during the overlap: until %v, secrets (-want +got):\n%s", until, d)
	}
	got, until = e.SigningSecrets(now.Add(time.Hour))
	if d := cmp.Diff([]string{s2}, got); d != "" || !until.IsZero() {
		t.Errorf("at the expiry: until %v, secrets (-want +got):\n%s", until, d)
	}
	if p := Pruned(e, now.Add(time.Hour)); p.OldSecrets != nil || len(Pruned(e, now).OldSecrets) != 1 {
		t.Errorf("Pruned at the expiry kept %v; want none (and the old secret before it)", p.OldSecrets)
	}
	later := now.Add(2 * time.Hour)
	e, err = Rotate(e, s3, later.Add(time.Minute), later)
	if err != nil {
		t.Fatal(err)
	}
	want := []OldSecret{{Secret: s2, ExpiresAt: later.Add(time.Minute)}}
	if d := cmp.Diff(want, e.OldSecrets); d != "" || e.Secrets[0] != s3 {
		t.Errorf("the second rotation drops the expired s1 and keeps s2 (-want +got):\n%s", d)
	}
}

func TestRotateRefusesBadInputNamingTheField(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	s1 := webhook.NewSecret()
	e := Endpoint{Secrets: []string{s1}}
	full := Endpoint{Secrets: []string{s1}}
	for range webhook.MaxSigners - 1 {
		full.OldSecrets = append(full.OldSecrets, OldSecret{Secret: webhook.NewSecret(), ExpiresAt: now.Add(time.Hour)})
	}
	for _, c := range []struct {
		name    string
		e       Endpoint
		secret  string
		expires time.Time
		field   string
	}{
		{"not-a-secret", e, "hunter2", now.Add(time.Hour), "secret"},
		{"same-secret", e, s1, now.Add(time.Hour), "secret"},
		{"expires-now", e, webhook.NewSecret(), now, "old_secret_expires_at"},
		{"expires-past", e, webhook.NewSecret(), now.Add(-time.Second), "old_secret_expires_at"},
		{"beyond-30-days", e, webhook.NewSecret(), now.Add(MaxOldSecretFor + time.Second), "old_secret_expires_at"},
		{"too-many-signing", full, webhook.NewSecret(), now.Add(time.Hour), "secret"},
	} {
		_, err := Rotate(c.e, c.secret, c.expires, now)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: err = %v; want a FieldError naming %s", c.name, err, c.field)
		}
	}
	if _, err := Rotate(e, webhook.NewSecret(), now.Add(MaxOldSecretFor), now); err != nil {
		t.Errorf("a 30-day overlap: %v; want it taken", err)
	}
}
