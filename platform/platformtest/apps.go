package platformtest

import (
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

// appsCRUD: an application is created with the store's times, read back
// as created, listed, renamed (UpdatedAt moves, CreatedAt stays) and
// deleted, after which it is not found, and deleting it again is
// ErrNotFound.
func appsCRUD(e *env) {
	id := e.id(platform.AppKind)
	created := e.now()
	a, err := e.s.CreateApp(e.ctx, platform.Application{ID: id, Name: "Acme ✓"})
	if err != nil {
		e.t.Fatal(err)
	}
	want := platform.Application{ID: id, Name: "Acme ✓", CreatedAt: created, UpdatedAt: created}
	diff(e.t, "CreateApp", want, a)
	got, err := e.s.GetApp(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "GetApp", want, got)
	e.tick(time.Second)
	up, err := e.s.UpdateApp(e.ctx, platform.Application{ID: id, Name: "Acme Corp", CreatedAt: time.Unix(1, 0)})
	if err != nil {
		e.t.Fatal(err)
	}
	want.Name, want.UpdatedAt = "Acme Corp", e.now()
	diff(e.t, "UpdateApp", want, up)
	list, err := e.s.ListApps(e.ctx, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "ListApps", []platform.Application{want}, list)
	if err := e.s.DeleteApp(e.ctx, id); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.GetApp(e.ctx, id)
	e.wantErr("GetApp after DeleteApp", err, platform.ErrNotFound)
	e.wantErr("DeleteApp again", e.s.DeleteApp(e.ctx, id), platform.ErrNotFound)
	_, err = e.s.UpdateApp(e.ctx, platform.Application{ID: id, Name: "x"})
	e.wantErr("UpdateApp of a deleted application", err, platform.ErrNotFound)
}

// appsConflict: an ID is one application; creating it again fails with
// ErrConflict and leaves the first as it was.
func appsConflict(e *env) {
	a := e.app("first")
	_, err := e.s.CreateApp(e.ctx, platform.Application{ID: a.ID, Name: "second"})
	e.wantErr("CreateApp of a taken ID", err, platform.ErrConflict)
	got, err := e.s.GetApp(e.ctx, a.ID)
	if err != nil || got.Name != "first" {
		e.t.Errorf("GetApp = %+v, %v; want the first application unchanged", got, err)
	}
}

// appsBadArguments: every input the contract refuses fails with a
// FieldError naming the field, and nothing is stored.
func appsBadArguments(e *env) {
	good := e.id(platform.AppKind)
	for _, c := range []struct {
		name  string
		app   platform.Application
		field string
	}{
		{"empty-name", platform.Application{ID: good, Name: ""}, "name"},
		{"control-char", platform.Application{ID: good, Name: "a\x00b"}, "name"},
		{"newline", platform.Application{ID: good, Name: "a\nb"}, "name"},
		{"not-utf8", platform.Application{ID: good, Name: "a\xffb"}, "name"},
		{"too-long", platform.Application{ID: good, Name: strings.Repeat("n", platform.MaxNameBytes+1)}, "name"},
		{"empty-id", platform.Application{ID: "", Name: "x"}, "id"},
		{"wrong-kind", platform.Application{ID: e.id(platform.EndpointKind), Name: "x"}, "id"},
		{"upper-case-id", platform.Application{ID: strings.ToUpper(good), Name: "x"}, "id"},
		{"short-id", platform.Application{ID: good[:len(good)-1], Name: "x"}, "id"},
	} {
		_, err := e.s.CreateApp(e.ctx, c.app)
		e.wantField("CreateApp "+c.name, err, c.field)
	}
	list, err := e.s.ListApps(e.ctx, "", platform.MaxLimit)
	if err != nil || len(list) != 0 {
		e.t.Errorf("ListApps after refused creates = %v, %v; want none", list, err)
	}
	a := e.app("kept")
	_, err = e.s.UpdateApp(e.ctx, platform.Application{ID: a.ID, Name: ""})
	e.wantField("UpdateApp with an empty name", err, "name")
	if got, _ := e.s.GetApp(e.ctx, a.ID); got.Name != "kept" {
		e.t.Errorf("name after a refused update = %q; want kept", got.Name)
	}
}

// appsPages: lists are in ID order, limit long, after the given ID;
// a limit outside [1, MaxLimit] or an after that is no ID is refused.
func appsPages(e *env) {
	var all []string
	for range 5 {
		all = append(all, e.app("a").ID)
	}
	all = sorted(all)
	var got []string
	after := ""
	for {
		page, err := e.s.ListApps(e.ctx, after, 2)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(page) > 2 {
			e.t.Fatalf("page of %d; limit 2", len(page))
		}
		got = append(got, ids(page, appID)...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
	}
	diff(e.t, "every page", all, got)
	page, err := e.s.ListApps(e.ctx, all[1], 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "after the second", all[2:], ids(page, appID))
	for _, limit := range []int{0, -1, platform.MaxLimit + 1} {
		_, err := e.s.ListApps(e.ctx, "", limit)
		e.wantField("ListApps limit", err, "limit")
	}
	_, err = e.s.ListApps(e.ctx, "nope", 1)
	e.wantField("ListApps after", err, "after")
}
