package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
)

// Secret rotation with an overlap, as Svix's
// POST .../endpoint/{id}/secret/rotate: the endpoint gets a new secret
// (given, or made), and its current secrets keep signing beside it until
// old_secret_expires_at (or old_secret_expires_in from now; 24 h if
// neither, 30 days at most), so a receiver can switch at its own pace.
// Each request in the overlap carries one signature per secret. The
// sender builds the endpoint's channel anew at the next attempt after a
// rotation, and again at each expiry, with no restart.

// rotateIn is the rotate route's optional body.
type rotateIn struct {
	Secret             *string `json:"secret"`
	OldSecretExpiresAt *string `json:"old_secret_expires_at"` // RFC 3339
	OldSecretExpiresIn *string `json:"old_secret_expires_in"` // a Go duration: "36h", "90m"
}

// expiry is when the old secrets stop signing, from the body and now.
// It writes the error answer itself.
func (in rotateIn) expiry(w http.ResponseWriter, now time.Time) (time.Time, bool) {
	switch {
	case in.OldSecretExpiresAt != nil && in.OldSecretExpiresIn != nil:
		writeField(w, "old_secret_expires_in", "give old_secret_expires_at or old_secret_expires_in, not both")
	case in.OldSecretExpiresAt != nil:
		t, err := time.Parse(time.RFC3339Nano, *in.OldSecretExpiresAt)
		if err != nil {
			writeField(w, "old_secret_expires_at", "%q is not an RFC 3339 time (2026-12-08T10:00:00Z)", clipText(*in.OldSecretExpiresAt))
			return time.Time{}, false
		}
		return t, true
	case in.OldSecretExpiresIn != nil:
		d, err := time.ParseDuration(*in.OldSecretExpiresIn)
		if err != nil || d <= 0 {
			writeField(w, "old_secret_expires_in", "%q is not a positive duration (\"36h\", \"90m\")", clipText(*in.OldSecretExpiresIn))
			return time.Time{}, false
		}
		if d > platform.MaxOldSecretFor {
			writeField(w, "old_secret_expires_in", "is %s; at most %s (30 days)", d, platform.MaxOldSecretFor)
			return time.Time{}, false
		}
		return now.Add(d), true
	default:
		return now.Add(platform.DefaultOldSecretFor), true
	}
	return time.Time{}, false
}

func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var in rotateIn
	if r.ContentLength != 0 && !a.decode(w, r, &in) {
		return
	}
	now := time.Now()
	expires, ok := in.expiry(w, now)
	if !ok {
		return
	}
	secret := webhook.NewSecret()
	if in.Secret != nil {
		secret = *in.Secret
	}
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	e, err := platform.Rotate(e, secret, expires, now)
	if err == nil {
		e, err = a.plat.Store().UpdateEndpoint(r.Context(), e)
	}
	if err != nil {
		writePlatErr(w, "rotating the secret", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "endpoint secret rotated", slog.String("app", e.AppID),
		slog.String("endpoint", e.ID), slog.Time("old_secret_expires_at", expires))
	writeJSON(w, http.StatusOK, viewSecrets(e))
}

// secretsView is what .../secrets and a rotation answer: the secrets
// and the old secrets still kept, with their expiries.
type secretsView struct {
	ID         string          `json:"id"`
	Secrets    []string        `json:"secrets"`
	OldSecrets []oldSecretView `json:"old_secrets"`
}

type oldSecretView struct {
	Secret    string    `json:"secret"`
	ExpiresAt time.Time `json:"expires_at"`
}

// viewSecrets shows e's secrets and the old ones still signing.
func viewSecrets(e platform.Endpoint) secretsView {
	v := secretsView{ID: e.ID, Secrets: e.Secrets, OldSecrets: []oldSecretView{}}
	for _, o := range platform.Pruned(e, time.Now()).OldSecrets {
		v.OldSecrets = append(v.OldSecrets, oldSecretView{Secret: o.Secret, ExpiresAt: o.ExpiresAt})
	}
	return v
}
