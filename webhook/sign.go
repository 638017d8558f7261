package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Header names of the Standard Webhooks scheme, and courier's own.
const (
	HeaderID        = "webhook-id"        // the event's ID, the same on every attempt
	HeaderTimestamp = "webhook-timestamp" // Unix seconds when this attempt was signed
	HeaderSignature = "webhook-signature" // "v1,<base64>" signatures, space-separated

	HeaderStream   = "courier-stream"   // the event's stream
	HeaderSequence = "courier-sequence" // the event's place in its stream (decimal, from 1)
	HeaderAttempt  = "courier-attempt"  // 1 for the first try
)

// MaxSigners bounds how many secrets sign at once: rotation needs two, a
// long list is a mistake and makes every verification slower.
const MaxSigners = 8

// sigLen is the length of one "v1,<base64 of 32 bytes>" signature.
const sigLen = len("v1,") + 44

// ErrID is wrapped by CheckID's errors.
var ErrID = errors.New("webhook id")

// MaxIDBytes bounds a webhook-id.
const MaxIDBytes = 256

// CheckID reports whether id can travel as a webhook-id: 1 to MaxIDBytes
// bytes of printable ASCII with no space. An ID is signed and sent as a
// header, so anything else would be mangled or split on the way.
func CheckID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrID)
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrID, len(id), MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: byte %d is 0x%02x; only printable ASCII without spaces", ErrID, i, c)
		}
	}
	return nil
}

// Signer signs with one or more secrets. With several (during a rotation)
// each request carries one signature per secret, space-separated, and a
// receiver that knows any one of them accepts it. A Signer is safe for
// concurrent use.
type Signer struct {
	secrets []Secret
}

// NewSigner returns a Signer for 1 to MaxSigners secrets.
func NewSigner(secrets ...Secret) (*Signer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook signer: at least one secret is needed")
	}
	if len(secrets) > MaxSigners {
		return nil, fmt.Errorf("webhook signer: %d secrets, at most %d", len(secrets), MaxSigners)
	}
	for i, s := range secrets {
		if s.IsZero() {
			return nil, fmt.Errorf("webhook signer: secret %d is the zero Secret (use ParseSecret)", i)
		}
	}
	return &Signer{secrets: append([]Secret(nil), secrets...)}, nil
}

// Sign returns the webhook-signature header value for one message:
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret, in the order
// the secrets were given, separated by single spaces.
func (s *Signer) Sign(id string, ts time.Time, body []byte) string {
	return string(s.AppendSign(make([]byte, 0, len(s.secrets)*(sigLen+1)), id, ts.Unix(), body))
}

// AppendSign appends Sign's result, for Unix time ts, to dst.
func (s *Signer) AppendSign(dst []byte, id string, ts int64, body []byte) []byte {
	for i, sec := range s.secrets {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, "v1,"...)
		var sum [sha256.Size]byte
		sec.mac(id, ts, body, sum[:0])
		dst = base64.StdEncoding.AppendEncode(dst, sum[:])
	}
	return dst
}

// SetHeaders sets webhook-id, webhook-timestamp and webhook-signature on h.
func (s *Signer) SetHeaders(h http.Header, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, s.Sign(id, ts, body))
}
