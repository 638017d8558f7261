//go:build plant

// This file proves that the planted bug VerifyFirstSecretOnly refuses a
// request signed with a rotation's second secret, which the verifier
// accepts without it.
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
	secrets, err := webhook.ParseSecrets([]string{nu})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := webhook.NewSigner(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"n":1}`)
	h := http.Header{}
	signer.SetHeaders(h, "evt_1", now, body)
	v, err := webhook.NewVerifier([]string{old, nu}, 0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bug  plant.Bug
		pass bool
	}{{"", true}, {plant.VerifyFirstSecretOnly, false}} {
		restore, err := plant.Set(c.bug)
		if err != nil {
			t.Fatal(err)
		}
		err = v.Verify(h, body)
		restore()
		if (err == nil) != c.pass {
			t.Errorf("bug %q: Verify of the new secret's signature gave %v", c.bug, err)
		}
	}
}
