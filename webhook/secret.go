package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// SecretPrefix starts every secret in its text form.
const SecretPrefix = "whsec_"

// Secret key sizes, in bytes after base64 decoding. The spec recommends
// 24 to 64 random bytes; a shorter key is refused because it is guessable,
// a longer one because it is almost certainly something else pasted in.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// ErrSecret is wrapped by every error ParseSecret returns.
var ErrSecret = errors.New("webhook secret")

// Secret is one HMAC-SHA256 key. Its String and LogValue never show the
// key, so a Secret can sit in a config struct that gets logged.
type Secret struct {
	key []byte
}

func newSecret(key []byte) Secret { return Secret{key: key} }

// mac appends HMAC(id "." ts "." body) to out. The prefix goes in one
// write and the body in another, so a large body is never copied.
func (s Secret) mac(id string, ts int64, body []byte, out []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	prefix := make([]byte, 0, len(id)+22)
	prefix = append(append(prefix, id...), '.')
	prefix = append(strconv.AppendInt(prefix, ts, 10), '.')
	h.Write(prefix)
	h.Write(body)
	return h.Sum(out)
}

// ParseSecret reads a secret in its text form: "whsec_" followed by the
// standard (padded) base64 of 24 to 64 bytes. The error says what is wrong
// without repeating the secret.
func ParseSecret(s string) (Secret, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, fmt.Errorf("%w: must start with %q (got %d characters without it)", ErrSecret, SecretPrefix, len(s))
	}
	if rest == "" {
		return Secret{}, fmt.Errorf("%w: empty after %q", ErrSecret, SecretPrefix)
	}
	if strings.TrimSpace(rest) != rest {
		return Secret{}, fmt.Errorf("%w: leading or trailing white space", ErrSecret)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		var pos base64.CorruptInputError
		if errors.As(err, &pos) {
			return Secret{}, fmt.Errorf("%w: not standard base64 after %q: bad character or padding at offset %d", ErrSecret, SecretPrefix, int64(pos)+int64(len(SecretPrefix)))
		}
		return Secret{}, fmt.Errorf("%w: not standard base64 after %q", ErrSecret, SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("%w: key is %d bytes, must be %d to %d", ErrSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return newSecret(key), nil
}

// ParseSecrets parses each of ss; the error names the index of the bad one.
func ParseSecrets(ss []string) ([]Secret, error) {
	out := make([]Secret, 0, len(ss))
	for i, s := range ss {
		sec, err := ParseSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		out = append(out, sec)
	}
	return out, nil
}

// NewSecret draws a fresh 32-byte secret from crypto/rand and returns it
// in text form, ready to hand to the receiver's operator.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics if the OS source does)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Text returns the secret's text form ("whsec_..."), for storing it. It is
// the only method that reveals the key.
func (s Secret) Text() string { return SecretPrefix + base64.StdEncoding.EncodeToString(s.key) }

// IsZero reports whether s holds no key (the zero Secret).
func (s Secret) IsZero() bool { return len(s.key) == 0 }

// String hides the key.
func (s Secret) String() string { return SecretPrefix + "[redacted]" }

// GoString hides the key from %#v too.
func (s Secret) GoString() string { return "webhook.Secret{[redacted]}" }

// LogValue hides the key from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
