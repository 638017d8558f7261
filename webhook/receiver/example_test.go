// Examples: the receiver a user would copy, on SQLite; the output proves a resent event is applied once.
package receiver_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/receiver"
)

// A receiver that applies each order once, with its effect and the dedup
// record in one SQLite transaction. Copy this, and put your own writes
// where the INSERT is.
func Example() {
	dir, _ := os.MkdirTemp("", "receiver-example-") // in production: your database
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
		log.Fatal(err)
	}
	store, err := receiver.NewSQL(context.Background(), db, receiver.SQLite)
	if err != nil {
		log.Fatal(err)
	}

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := receiver.FromContext(r.Context())
		// Your effect, in the claim's transaction: it commits only with a 2xx.
		if _, err := receiver.Tx(r.Context()).ExecContext(r.Context(),
			`INSERT INTO orders (id, body) VALUES (?, ?)`, ev.ID, string(ev.Body)); err != nil {
			http.Error(w, "cannot apply", http.StatusInternalServerError) // courier will retry
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	handler, err := receiver.New(receiver.Config{
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, // from your secret store
		Window:  8 * 24 * time.Hour,                                 // longer than the sender's MaxAge
		Store:   store,
	}, app)
	if err != nil {
		log.Fatal(err) // bad config: refuse to start
	}
	srv := httptest.NewServer(handler) // in production: http.Handle("/hooks", handler)
	defer srv.Close()

	// courier sends the same event twice (its first reply was lost).
	for range 2 {
		fmt.Println(deliver(srv.URL, "evt_42", `{"order":42}`))
	}
	var n int
	_ = db.QueryRow(`SELECT COUNT(*) FROM orders`).Scan(&n)
	fmt.Println("orders applied:", n)
	// Output:
	// 204
	// 200
	// orders applied: 1
}

// deliver signs and posts one event the way courier does.
func deliver(url, id, body string) int {
	s, _ := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	signer, _ := webhook.NewSigner(s)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	signer.SetHeaders(req.Header, id, time.Now(), []byte(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
