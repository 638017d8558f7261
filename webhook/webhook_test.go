// Tests that courier signs the spec's published vector exactly, that it
// and the reference library (standard-webhooks v1.3.0) accept each
// other's signatures, that rotation works with several secrets, and that
// every malformed, stale or forged request is refused with the right error.
package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The Standard Webhooks spec's published test vector.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func mustSigner(t testing.TB, ss ...string) *Signer {
	t.Helper()
	var secs []Secret
	for _, s := range ss {
		secs = append(secs, mustSecret(t, s))
	}
	sg, err := NewSigner(secs...)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func TestSpecVector(t *testing.T) {
	got := mustSigner(t, specSecret).Sign(specID, time.Unix(specTS, 0), []byte(specBody))
	if got != specSig {
		t.Fatalf("Sign(spec vector) = %q, want %q", got, specSig)
	}
	h := http.Header{}
	h.Set(HeaderID, specID)
	h.Set(HeaderTimestamp, strconv.Itoa(specTS))
	h.Set(HeaderSignature, specSig)
	if err := Verify(h, []byte(specBody), time.Unix(specTS, 0), 0, mustSecret(t, specSecret)); err != nil {
		t.Fatalf("Verify(spec vector): %v", err)
	}
}

// The reference library verifies what courier signs, with one secret and
// with two (rotation: it must accept the header whichever secret it has).
func TestInteropReferenceVerifiesCourier(t *testing.T) {
	next := NewSecret()
	for _, secrets := range [][]string{{specSecret}, {specSecret, next}, {next, specSecret}} {
		sg := mustSigner(t, secrets...)
		for _, body := range []string{"", specBody, strings.Repeat("é", 5000)} {
			h := http.Header{}
			sg.SetHeaders(h, "evt_"+strconv.Itoa(len(body)), time.Now(), []byte(body))
			for _, s := range secrets {
				ref, err := standardwebhooks.NewWebhook(s)
				if err != nil {
					t.Fatal(err)
				}
				if err := ref.Verify([]byte(body), h); err != nil {
					t.Errorf("reference Verify of courier's %d-secret signature, body %d bytes: %v", len(secrets), len(body), err)
				}
				if err := ref.Verify([]byte(body+"x"), h); err == nil {
					t.Errorf("reference accepted a tampered body")
				}
			}
		}
	}
}

// courier's Verify accepts what the reference library signs, and refuses
// it under another secret.
func TestInteropCourierVerifiesReference(t *testing.T) {
	ref, err := standardwebhooks.NewWebhook(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, body := range []string{"", specBody, strings.Repeat("x", 1<<20)} {
		sig, err := ref.Sign("msg_ref", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_ref")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		if err := Verify(h, []byte(body), now, 0, mustSecret(t, specSecret)); err != nil {
			t.Errorf("Verify of the reference's signature, body %d bytes: %v", len(body), err)
		}
		if err := Verify(h, []byte(body), now, 0, mustSecret(t, NewSecret())); !errors.Is(err, ErrNoSignature) {
			t.Errorf("Verify under another secret = %v, want ErrNoSignature", err)
		}
	}
}

// During a rotation the sender signs with old and new; receivers holding
// either (or both) accept; a receiver holding neither refuses.
func TestRotation(t *testing.T) {
	old, next, other := NewSecret(), NewSecret(), NewSecret()
	sg := mustSigner(t, old, next)
	now := time.Unix(1_700_000_000, 0)
	h := http.Header{}
	sg.SetHeaders(h, "evt_1", now, []byte("{}"))
	if n := len(strings.Fields(h.Get(HeaderSignature))); n != 2 {
		t.Fatalf("two secrets gave %d signatures: %q", n, h.Get(HeaderSignature))
	}
	for _, recv := range [][]string{{old}, {next}, {next, old}} {
		v, err := NewVerifier(recv, 0, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(h, []byte("{}")); err != nil {
			t.Errorf("receiver with %d of the secrets: %v", len(recv), err)
		}
	}
	if err := Verify(h, []byte("{}"), now, 0, mustSecret(t, other)); !errors.Is(err, ErrNoSignature) {
		t.Errorf("receiver with neither secret: %v, want ErrNoSignature", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	sec := mustSecret(t, specSecret)
	now := time.Unix(specTS, 0)
	good := func() http.Header {
		h := http.Header{}
		h.Set(HeaderID, specID)
		h.Set(HeaderTimestamp, strconv.Itoa(specTS))
		h.Set(HeaderSignature, specSig)
		return h
	}
	cases := []struct {
		name string
		edit func(h http.Header)
		body string
		now  time.Time
		want error
	}{
		{"no id", func(h http.Header) { h.Del(HeaderID) }, specBody, now, ErrMalformed},
		{"no timestamp", func(h http.Header) { h.Del(HeaderTimestamp) }, specBody, now, ErrMalformed},
		{"no signature", func(h http.Header) { h.Del(HeaderSignature) }, specBody, now, ErrMalformed},
		{"two ids", func(h http.Header) { h.Add(HeaderID, "other") }, specBody, now, ErrMalformed},
		{"id with space", func(h http.Header) { h.Set(HeaderID, "a b") }, specBody, now, ErrMalformed},
		{"signed timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "+1614265330") }, specBody, now, ErrMalformed},
		{"fractional timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "1614265330.0") }, specBody, now, ErrMalformed},
		{"signature without comma", func(h http.Header) { h.Set(HeaderSignature, "v1") }, specBody, now, ErrMalformed},
		{"blank signature", func(h http.Header) { h.Set(HeaderSignature, "   ") }, specBody, now, ErrMalformed},
		{"too many signatures", func(h http.Header) { h.Set(HeaderSignature, strings.Repeat(specSig+" ", MaxSignatures+1)) }, specBody, now, ErrMalformed},
		{"stale", nil, specBody, now.Add(DefaultTolerance + time.Second), ErrTooOld},
		{"future", nil, specBody, now.Add(-DefaultTolerance - time.Second), ErrTooNew},
		{"tampered body", nil, specBody + " ", now, ErrNoSignature},
		{"tampered id", func(h http.Header) { h.Set(HeaderID, specID+"x") }, specBody, now, ErrNoSignature},
		{"tampered timestamp", func(h http.Header) { h.Set(HeaderTimestamp, strconv.Itoa(specTS+1)) }, specBody, now, ErrNoSignature},
		{"unknown version only", func(h http.Header) { h.Set(HeaderSignature, "v1a,"+specSig[3:]) }, specBody, now, ErrNoSignature},
		{"truncated signature", func(h http.Header) { h.Set(HeaderSignature, specSig[:len(specSig)-2]) }, specBody, now, ErrNoSignature},
		{"signature not base64", func(h http.Header) { h.Set(HeaderSignature, "v1,"+strings.Repeat("*", 44)) }, specBody, now, ErrNoSignature},
	}
	for _, c := range cases {
		h := good()
		if c.edit != nil {
			c.edit(h)
		}
		err := Verify(h, []byte(c.body), c.now, 0, sec)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
	// The good request passes, at both edges of the tolerance, and among
	// other signatures of unknown versions or other keys.
	for _, at := range []time.Time{now.Add(DefaultTolerance), now.Add(-DefaultTolerance)} {
		if err := Verify(good(), []byte(specBody), at, 0, sec); err != nil {
			t.Errorf("at the tolerance's edge: %v", err)
		}
	}
	h := good()
	h.Set(HeaderSignature, "v1a,abc v1,"+strings.Repeat("A", 43)+"= "+specSig)
	if err := Verify(h, []byte(specBody), now, 0, sec); err != nil {
		t.Errorf("a good signature after others: %v", err)
	}
}

func TestParseSecret(t *testing.T) {
	cases := []struct {
		in, wantErr string
	}{
		{specSecret, ""},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", `must start with "whsec_"`},
		{"whsec_", "empty after"},
		{"whsec_ MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "white space"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!", "offset 37"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "not standard base64"},
		{"whsec_c2hvcnQ=", "key is 5 bytes, must be 24 to 64"},
		{"whsec_" + strings.Repeat("AAAA", 22), "key is 66 bytes"},
	}
	for _, c := range cases {
		s, err := ParseSecret(c.in)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("ParseSecret(%q): %v", c.in, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrSecret)):
			t.Errorf("ParseSecret(%q) = %v, want an ErrSecret saying %q", c.in, err, c.wantErr)
		case err != nil && len(c.in) > 12 && strings.Contains(err.Error(), c.in[6:]):
			t.Errorf("ParseSecret's error repeats the secret: %v", err)
		case err == nil && s.Text() != c.in:
			t.Errorf("Text() = %q, want %q", s.Text(), c.in)
		}
	}
	s := mustSecret(t, specSecret)
	for _, shown := range []string{s.String(), s.GoString(), s.LogValue().String()} {
		if strings.Contains(shown, "MfKQ") {
			t.Errorf("a Secret shows its key: %q", shown)
		}
	}
	if _, err := ParseSecret(NewSecret()); err != nil {
		t.Errorf("NewSecret's output does not parse: %v", err)
	}
}

func TestNewSignerRefuses(t *testing.T) {
	if _, err := NewSigner(); err == nil {
		t.Error("NewSigner() with no secret succeeded")
	}
	if _, err := NewSigner(Secret{}); err == nil {
		t.Error("NewSigner(zero Secret) succeeded")
	}
	many := make([]Secret, MaxSigners+1)
	for i := range many {
		many[i] = mustSecret(t, NewSecret())
	}
	if _, err := NewSigner(many...); err == nil {
		t.Error("NewSigner with too many secrets succeeded")
	}
	if _, err := NewVerifier(nil, 0, nil); err == nil {
		t.Error("NewVerifier with no secret succeeded")
	}
	if _, err := NewVerifier([]string{"nope"}, 0, nil); err == nil || !strings.Contains(err.Error(), "secret 0") {
		t.Errorf("NewVerifier with a bad secret: %v, want an error naming secret 0", err)
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"a", specID, "order-42:hook-7", strings.Repeat("x", MaxIDBytes)} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a\nb", "é", "a\x00", strings.Repeat("x", MaxIDBytes+1)} {
		if err := CheckID(bad); !errors.Is(err, ErrID) {
			t.Errorf("CheckID(%q) = %v, want ErrID", bad, err)
		}
	}
}
