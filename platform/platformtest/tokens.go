package platformtest

import (
	"strings"

	"github.com/courierlab/courier/platform"
)

// token builds (does not store) a token of app, and returns the token
// itself with it.
func (e *env) token(app, name string) (platform.AppToken, string) {
	tok := platform.NewToken()
	return platform.AppToken{ID: e.id(platform.TokenKind), AppID: app, Name: name, Hash: platform.HashToken(tok)}, tok
}

// tokensCRUD: a token is created for an existing application only, found
// by the hash of the token (never by another's), listed with its
// application's only, deleted by its own application only, and gone with
// its application; a taken ID or hash is a conflict.
func tokensCRUD(e *env) {
	a, other := e.app("a"), e.app("other")
	t, tok := e.token(a.ID, "ci")
	_, err := e.s.CreateToken(e.ctx, platform.AppToken{ID: t.ID, AppID: e.id(platform.AppKind), Name: "x", Hash: t.Hash})
	e.wantErr("CreateToken of an unknown application", err, platform.ErrNotFound)
	created := e.now()
	got, err := e.s.CreateToken(e.ctx, t)
	if err != nil {
		e.t.Fatal(err)
	}
	want := t
	want.CreatedAt = created
	diff(e.t, "CreateToken", want, got)
	_, err = e.s.CreateToken(e.ctx, t)
	e.wantErr("CreateToken of a taken ID", err, platform.ErrConflict)
	again, _ := e.token(other.ID, "again")
	again.Hash = t.Hash
	_, err = e.s.CreateToken(e.ctx, again)
	e.wantErr("CreateToken of a taken hash", err, platform.ErrConflict)

	found, err := e.s.TokenByHash(e.ctx, platform.HashToken(tok))
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "TokenByHash", want, found)
	_, err = e.s.TokenByHash(e.ctx, platform.HashToken(platform.NewToken()))
	e.wantErr("TokenByHash of a token never made", err, platform.ErrNotFound)

	theirs, _ := e.token(other.ID, "theirs")
	if _, err := e.s.CreateToken(e.ctx, theirs); err != nil {
		e.t.Fatal(err)
	}
	list, err := e.s.ListTokens(e.ctx, a.ID, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "ListTokens", []platform.AppToken{want}, list)
	_, err = e.s.ListTokens(e.ctx, e.id(platform.AppKind), "", 10)
	e.wantErr("ListTokens of an unknown application", err, platform.ErrNotFound)

	e.wantErr("DeleteToken under another application", e.s.DeleteToken(e.ctx, other.ID, t.ID), platform.ErrNotFound)
	if err := e.s.DeleteToken(e.ctx, a.ID, t.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.TokenByHash(e.ctx, t.Hash)
	e.wantErr("TokenByHash after DeleteToken", err, platform.ErrNotFound)
	e.wantErr("DeleteToken twice", e.s.DeleteToken(e.ctx, a.ID, t.ID), platform.ErrNotFound)

	if err := e.s.DeleteApp(e.ctx, other.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.TokenByHash(e.ctx, theirs.Hash)
	e.wantErr("TokenByHash after DeleteApp", err, platform.ErrNotFound)
}

// tokensBadArguments: a bad token names its field and stores nothing;
// an application holds at most MaxTokensPerApp tokens; malformed IDs are
// not found.
func tokensBadArguments(e *env) {
	a := e.app("a")
	good, _ := e.token(a.ID, "ok")
	for _, c := range []struct {
		name  string
		edit  func(t *platform.AppToken)
		field string
	}{
		{"empty-name", func(t *platform.AppToken) { t.Name = "" }, "name"},
		{"control-char", func(t *platform.AppToken) { t.Name = "a\nb" }, "name"},
		{"long-name", func(t *platform.AppToken) { t.Name = strings.Repeat("n", platform.MaxNameBytes+1) }, "name"},
		{"wrong-kind", func(t *platform.AppToken) { t.ID = e.id(platform.EndpointKind) }, "id"},
		{"bad-app", func(t *platform.AppToken) { t.AppID = "app_x" }, "app_id"},
		{"short-hash", func(t *platform.AppToken) { t.Hash = t.Hash[1:] }, "hash"},
		{"upper-hash", func(t *platform.AppToken) { t.Hash = strings.ToUpper(t.Hash) }, "hash"},
		{"raw-token", func(t *platform.AppToken) { t.Hash = platform.NewToken() }, "hash"},
	} {
		bad := good
		c.edit(&bad)
		_, err := e.s.CreateToken(e.ctx, bad)
		e.wantField("CreateToken "+c.name, err, c.field)
	}
	list, err := e.s.ListTokens(e.ctx, a.ID, "", platform.MaxLimit)
	if err != nil || len(list) != 0 {
		e.t.Errorf("ListTokens after refused creates = %v, %v; want none", list, err)
	}
	_, err = e.s.ListTokens(e.ctx, a.ID, "ep_x", 1)
	e.wantField("ListTokens after", err, "after")
	for range platform.MaxTokensPerApp {
		t, _ := e.token(a.ID, "many")
		if _, err := e.s.CreateToken(e.ctx, t); err != nil {
			e.t.Fatal(err)
		}
	}
	_, err = e.s.CreateToken(e.ctx, good)
	e.wantErr("CreateToken beyond MaxTokensPerApp", err, platform.ErrConflict)
	for _, id := range []string{"", "\xff", "tok_x", strings.Repeat("a", 5000)} {
		e.wantErr("DeleteToken "+id, e.s.DeleteToken(e.ctx, a.ID, id), platform.ErrNotFound)
	}
}
