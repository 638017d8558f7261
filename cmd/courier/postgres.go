package main

import (
	"context"
	"errors"
)

// openPostgres opens the PostgreSQL store; it waits for store/pgstore.
func openPostgres(context.Context, string) (*backend, error) {
	return nil, usageError{errors.New("-postgres: this build has no PostgreSQL store yet")}
}
