package platform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// AppToken is a bearer token that reaches one application only: the
// routes of its own application (another application's answer as if it
// did not exist), never the admin routes. The token itself is shown once,
// when it is made; the store keeps its SHA-256 (Hash), so a copy of the
// store does not hand out working tokens.
type AppToken struct {
	ID        string // "tok_" and 26 base32 characters (NewID(TokenKind, ...)): names it in the API
	AppID     string
	Name      string // what it is for, 1 to MaxNameBytes
	Hash      string // HashToken of the token, 64 lower-case hex characters
	CreatedAt time.Time
}

// TokenKind is the prefix of an application token's ID; TokenPrefix is
// the prefix of the token itself, so a leaked one is recognised (by a
// secret scanner, in a log) for what it is.
const (
	TokenKind   = "tok"
	TokenPrefix = "ctk_"
)

// MaxTokensPerApp bounds an application's tokens.
const MaxTokensPerApp = 100

// NewToken returns a fresh application token: TokenPrefix and 32 random
// bytes in lower-case base32 (52 characters).
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return TokenPrefix + idEncoding.EncodeToString(b[:])
}

// IsToken reports whether tok looks like an application token (its
// prefix): an admin token never does, so a request is checked against
// one kind only.
func IsToken(tok string) bool { return strings.HasPrefix(tok, TokenPrefix) }

// HashToken is what a store keeps of tok: its SHA-256 in lower-case hex.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// CheckToken checks what a store keeps of t.
func CheckToken(t AppToken) error {
	if err := CheckID("id", TokenKind, t.ID); err != nil {
		return err
	}
	if err := CheckID("app_id", AppKind, t.AppID); err != nil {
		return err
	}
	if err := checkText("name", t.Name, MaxNameBytes, false); err != nil {
		return err
	}
	if len(t.Hash) != 2*sha256.Size || strings.Trim(t.Hash, "0123456789abcdef") != "" {
		return fieldErr("hash", "is not a SHA-256 in lower-case hex")
	}
	return nil
}

// TokenStore keeps application tokens. It is part of Store; the contract
// of Store holds for it (errors, pages in ID order).
type TokenStore interface {
	// CreateToken stores t (checked by CheckToken) for application
	// t.AppID: ErrNotFound if there is no such application, ErrConflict
	// if its ID or hash is taken or the application has
	// MaxTokensPerApp tokens already.
	CreateToken(ctx context.Context, t AppToken) (AppToken, error)
	// ListTokens lists application app's tokens in ID order after after.
	// ErrNotFound if there is no such application.
	ListTokens(ctx context.Context, app, after string, limit int) ([]AppToken, error)
	// DeleteToken deletes token id of application app (ErrNotFound if it
	// has none): from then on the token is refused.
	DeleteToken(ctx context.Context, app, id string) error
	// TokenByHash finds the token whose HashToken is hash: ErrNotFound if
	// none (it was never made, or was deleted with its application).
	TokenByHash(ctx context.Context, hash string) (AppToken, error)
}
