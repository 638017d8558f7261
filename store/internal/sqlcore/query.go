package sqlcore

import "context"

// Query is one query of a QueryAll: each row it returns is handed to
// Each, in order.
type Query struct {
	SQL  string
	Args []any
	Each func(row Row) error
}

// Pipeliner is a Tx that can send several queries in one round trip
// (pgstore: a pgx batch). Queries runs them in order and stops at the
// first error, which it returns.
type Pipeliner interface {
	Queries(ctx context.Context, qs []Query) error
}

// queryAll runs qs in order: in one round trip when tx is a Pipeliner,
// one query at a time otherwise. A call whose queries do not depend on
// each other's answers sends them with queryAll.
func queryAll(ctx context.Context, tx Tx, qs []Query) error {
	if p, ok := tx.(Pipeliner); ok {
		return p.Queries(ctx, qs)
	}
	for _, q := range qs {
		rows, err := tx.Query(ctx, q.SQL, q.Args...)
		if err != nil {
			return err
		}
		if err := EachRow(rows, q.Each); err != nil {
			return err
		}
	}
	return nil
}

// EachRow hands each of rows to each, and closes rows.
func EachRow(rows Rows, each func(Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
