package platform

import (
	"slices"
	"strconv"
	"time"

	"github.com/courierlab/courier/webhook"
)

// OldSecret is a secret an endpoint was rotated away from: it keeps
// signing, beside the endpoint's Secrets, until ExpiresAt, so that a
// receiver that has not switched yet still verifies every request
// (Standard Webhooks carries several signatures in webhook-signature).
type OldSecret struct {
	Secret    string
	ExpiresAt time.Time // kept to the microsecond, as every time of the store
}

// The bounds of a rotation's overlap: how long an old secret keeps
// signing after a rotation that does not say (DefaultOldSecretFor), and
// the longest one may be asked to (MaxOldSecretFor).
const (
	DefaultOldSecretFor = 24 * time.Hour
	MaxOldSecretFor     = 30 * 24 * time.Hour
)

// SigningSecrets are the secrets that sign a request to e at now: its
// Secrets, then its old secrets not yet expired. Until is the instant
// the set next changes (the earliest expiry after now), zero if never:
// a sender that keeps a channel built from the set builds it again then.
func (e Endpoint) SigningSecrets(now time.Time) (secrets []string, until time.Time) {
	secrets = slices.Clone(e.Secrets)
	for _, o := range e.OldSecrets {
		if now.Before(o.ExpiresAt) {
			secrets = append(secrets, o.Secret)
			if until.IsZero() || o.ExpiresAt.Before(until) {
				until = o.ExpiresAt
			}
		}
	}
	return secrets, until
}

// Rotate returns e with secret as its only secret and each of its
// current secrets kept signing until expires, as OldSecrets; old secrets
// expired at now are dropped. The new secret must be one no secret of e
// is, expires after now and at most MaxOldSecretFor away, and the
// secrets still signing at most webhook.MaxSigners. Errors name the
// field as the rotate route spells it.
func Rotate(e Endpoint, secret string, expires, now time.Time) (Endpoint, error) {
	if _, err := webhook.ParseSecret(secret); err != nil {
		return Endpoint{}, fieldErr("secret", "is not a whsec_ secret")
	}
	switch {
	case !now.Before(expires):
		return Endpoint{}, fieldErr("old_secret_expires_at", "is %s, not after now (%s)", expires.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case expires.Sub(now) > MaxOldSecretFor:
		return Endpoint{}, fieldErr("old_secret_expires_at", "is %s away; at most %s (30 days)", expires.Sub(now).Round(time.Second), MaxOldSecretFor)
	}
	live, _ := e.SigningSecrets(now)
	if slices.Contains(live, secret) {
		return Endpoint{}, fieldErr("secret", "signs for the endpoint already; give a new one")
	}
	if len(live)+1 > webhook.MaxSigners {
		return Endpoint{}, fieldErr("secret", "would make %d secrets signing at once; at most %d (wait for an old one to expire)", len(live)+1, webhook.MaxSigners)
	}
	old := Pruned(e, now).OldSecrets
	at := expires.Truncate(time.Microsecond).UTC()
	for _, s := range e.Secrets {
		old = append(old, OldSecret{Secret: s, ExpiresAt: at})
	}
	e.Secrets, e.OldSecrets = []string{secret}, old
	return e, nil
}

// Pruned returns e without the old secrets expired at now (nil if none
// is left): what a change of the endpoint writes, so that expired
// secrets are not kept, shown, or counted against webhook.MaxSigners.
func Pruned(e Endpoint, now time.Time) Endpoint {
	var old []OldSecret
	for _, o := range e.OldSecrets {
		if now.Before(o.ExpiresAt) {
			old = append(old, o)
		}
	}
	e.OldSecrets = old
	return e
}

// checkOldSecrets checks what a store keeps of e's old secrets: each a
// whsec_ secret with an expiry, and with e.Secrets at most
// webhook.MaxSigners in all.
func checkOldSecrets(e Endpoint) error {
	if n := len(e.Secrets) + len(e.OldSecrets); n > webhook.MaxSigners {
		return fieldErr("old_secrets", "makes %d secrets with secrets; at most %d", n, webhook.MaxSigners)
	}
	for i, o := range e.OldSecrets {
		field := "old_secrets[" + strconv.Itoa(i) + "]"
		if _, err := webhook.ParseSecret(o.Secret); err != nil {
			return fieldErr(field+".secret", "is not a whsec_ secret")
		}
		if o.ExpiresAt.IsZero() {
			return fieldErr(field+".expires_at", "is missing")
		}
	}
	return nil
}
