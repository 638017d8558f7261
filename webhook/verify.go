package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier/internal/plant"
)

// DefaultTolerance is how far a webhook-timestamp may be from the
// receiver's clock, either way, per the spec's recommendation.
const DefaultTolerance = 5 * time.Minute

// Bounds on what a verifier reads, so a hostile request costs little.
const (
	MaxSignatureHeaderBytes = 4096
	MaxSignatures           = 16
)

// Verification errors. Every error Verify returns wraps exactly one of
// them, so a receiver can answer 400 for ErrMalformed and 401 otherwise.
var (
	ErrMalformed   = errors.New("webhook: malformed or missing headers")
	ErrTooOld      = errors.New("webhook: timestamp too old")
	ErrTooNew      = errors.New("webhook: timestamp too far in the future")
	ErrNoSignature = errors.New("webhook: no matching signature")
)

// Signature is one entry of a webhook-signature header.
type Signature struct {
	Version string // "v1" for HMAC-SHA256; others are carried, not checked
	Value   string // base64, as sent
}

// ParseSignatureHeader splits a webhook-signature value into its
// space-separated "version,value" entries. Repeated spaces are allowed;
// an entry without a comma, an empty version or value, more than
// MaxSignatures entries or a value longer than MaxSignatureHeaderBytes is
// malformed.
func ParseSignatureHeader(v string) ([]Signature, error) {
	if len(v) > MaxSignatureHeaderBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrMalformed, HeaderSignature, len(v), MaxSignatureHeaderBytes)
	}
	var out []Signature
	for f := range strings.FieldsSeq(v) {
		ver, val, ok := strings.Cut(f, ",")
		if !ok || ver == "" || val == "" {
			return nil, fmt.Errorf("%w: %s entry %d is not \"version,signature\"", ErrMalformed, HeaderSignature, len(out)+1)
		}
		if len(out) == MaxSignatures {
			return nil, fmt.Errorf("%w: %s has more than %d entries", ErrMalformed, HeaderSignature, MaxSignatures)
		}
		out = append(out, Signature{Version: ver, Value: val})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrMalformed, HeaderSignature)
	}
	return out, nil
}

// ParseTimestamp reads a webhook-timestamp: decimal Unix seconds, digits
// only (no sign, no spaces, no fraction), at most 12 digits.
func ParseTimestamp(v string) (time.Time, error) {
	if v == "" || len(v) > 12 {
		return time.Time{}, fmt.Errorf("%w: %s must be 1 to 12 digits", ErrMalformed, HeaderTimestamp)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return time.Time{}, fmt.Errorf("%w: %s must be decimal digits only", ErrMalformed, HeaderTimestamp)
		}
	}
	n, _ := strconv.ParseInt(v, 10, 64) // 12 digits cannot overflow
	return time.Unix(n, 0), nil
}

// single returns the one value of header name, or an error if it is
// absent or repeated (two ids or two timestamps would be ambiguous).
func single(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: %s is missing", ErrMalformed, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %s appears %d times", ErrMalformed, name, len(vs))
	}
	return vs[0], nil
}

// Verify checks a received webhook: the three headers are present and
// well formed, the timestamp is within tolerance of now (either way), and
// at least one v1 signature is the HMAC of id.timestamp.body under at
// least one of secrets, compared in constant time. Signatures of other
// versions are skipped. A tolerance of 0 means DefaultTolerance.
func Verify(h http.Header, body []byte, now time.Time, tolerance time.Duration, secrets ...Secret) error {
	if len(secrets) == 0 {
		return errors.New("webhook: Verify needs at least one secret")
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, err := single(h, HeaderID)
	if err != nil {
		return err
	}
	if err := CheckID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	tsText, err := single(h, HeaderTimestamp)
	if err != nil {
		return err
	}
	ts, err := ParseTimestamp(tsText)
	if err != nil {
		return err
	}
	sigText, err := single(h, HeaderSignature)
	if err != nil {
		return err
	}
	sigs, err := ParseSignatureHeader(sigText)
	if err != nil {
		return err
	}
	if d := now.Sub(ts); d > tolerance {
		return fmt.Errorf("%w: signed %s before now, tolerance %s", ErrTooOld, d.Truncate(time.Second), tolerance)
	} else if -d > tolerance {
		return fmt.Errorf("%w: signed %s after now, tolerance %s", ErrTooNew, (-d).Truncate(time.Second), tolerance)
	}
	return match(sigs, id, ts.Unix(), body, secrets)
}

// match compares every v1 signature with the expected MAC of every secret.
// hmac.Equal is constant-time; a value that is not 32 bytes of base64
// cannot match and is skipped.
func match(sigs []Signature, id string, ts int64, body []byte, secrets []Secret) error {
	want := make([][sha256.Size]byte, len(secrets))
	for i, s := range secrets {
		s.mac(id, ts, body, want[i][:0])
	}
	found := false
	for _, sig := range sigs {
		if sig.Version != "v1" || len(sig.Value) != 44 {
			continue
		}
		var got [sha256.Size + 1]byte // DecodedLen(44) is 33
		n, err := base64.StdEncoding.Decode(got[:], []byte(sig.Value))
		if err != nil || n != sha256.Size {
			continue
		}
		for i := range want {
			if i > 0 && plant.On(plant.VerifyFirstSecretOnly) {
				break // the planted bug: the rotation's new secret is never tried
			}
			if hmac.Equal(got[:n], want[i][:]) {
				found = true // keep going: no early exit to time
			}
		}
	}
	if !found {
		return ErrNoSignature
	}
	return nil
}

// Verifier holds a receiver's secrets and tolerance; its Verify reads the
// clock. Build it with NewVerifier.
type Verifier struct {
	secrets   []Secret
	tolerance time.Duration
	now       func() time.Time
}

// NewVerifier returns a Verifier for the secrets in text form. tolerance
// 0 means DefaultTolerance; now nil means time.Now.
func NewVerifier(secrets []string, tolerance time.Duration, now func() time.Time) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook verifier: at least one secret is needed")
	}
	if tolerance < 0 {
		return nil, fmt.Errorf("webhook verifier: tolerance %s is negative", tolerance)
	}
	ss, err := ParseSecrets(secrets)
	if err != nil {
		return nil, fmt.Errorf("webhook verifier: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{secrets: ss, tolerance: tolerance, now: now}, nil
}

// Verify is the package's Verify with v's secrets, tolerance and clock.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	return Verify(h, body, v.now(), v.tolerance, v.secrets...)
}
