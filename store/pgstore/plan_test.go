// This file proves that a Save's two batch statements find their rows
// through the primary key even in a generic plan built while the table
// is empty: the plan PostgreSQL keeps for a prepared statement after its
// fifth run, which a connection then uses for as long as it lives.
package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestSaveFindsRowsByIndex(t *testing.T) {
	conn := server(t)
	ctx := t.Context()
	s := open(t, nil)
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	for _, q := range []string{
		"SET search_path TO " + s.schema,
		"SET plan_cache_mode TO force_generic_plan",
		"PREPARE lock_deliveries AS " + dialect.LockDeliveries,
		"PREPARE write_deliveries AS " + dialect.WriteDeliveries,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`EXPLAIN EXECUTE lock_deliveries('{a,b}')`,
		`EXPLAIN EXECUTE write_deliveries('{a}', '{4}', '{1}', '{0}', '{0}', '{1}', '{204}', '{""}', '{0}', '{0}')`,
	} {
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on deliveries") || !strings.Contains(plan, "deliveries_pkey") {
			t.Errorf("%s: the generic plan does not find the rows through deliveries_pkey:\n%s", q, plan)
		}
	}
}
