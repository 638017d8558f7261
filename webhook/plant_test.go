//go:build plant

// This file proves that the planted bug VerifyFirstSecretOnly refuses a
// request signed with a rotation's second secret, which the verifier
// accepts without it, and still accepts one signed with the first.
package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/webhook"
)

func TestVerifyFirstSecretOnly(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old, nu := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{"n":1}`)
	signed := func(secret string) http.Header {
		t.Helper()
		secrets, err := webhook.ParseSecrets([]string{secret})
		if err != nil {
			t.Fatal(err)
		}
		signer, err := webhook.NewSigner(secrets...)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		signer.SetHeaders(h, "evt_1", now, body)
		return h
	}
	byOld, byNew := signed(old), signed(nu)
	v, err := webhook.NewVerifier([]string{old, nu}, 0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	// The bug changes exactly one answer: the new secret's signature is
	// refused; the first secret's is accepted with or without it.
	for _, c := range []struct {
		bug     plant.Bug
		passNew bool
	}{{"", true}, {plant.VerifyFirstSecretOnly, false}} {
		restore, err := plant.Set(c.bug)
		if err != nil {
			t.Fatal(err)
		}
		errOld, errNew := v.Verify(byOld, body), v.Verify(byNew, body)
		restore()
		if errOld != nil {
			t.Errorf("bug %q: Verify of the first secret's signature gave %v", c.bug, errOld)
		}
		if (errNew == nil) != c.passNew {
			t.Errorf("bug %q: Verify of the new secret's signature gave %v", c.bug, errNew)
		}
	}
}
