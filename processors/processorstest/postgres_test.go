package processorstest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartPostgresKillRestart(t *testing.T) {
	ctx := context.Background()
	pg := StartPostgres(t)
	query := func() (int, error) {
		conn, err := pgx.Connect(ctx, pg.URL())
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		var n int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
		return n, err
	}
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	pg.Kill()
	// The open connection's backend must be dead too, not only the postmaster.
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query on a connection opened before the kill succeeded")
	}
	if _, err := query(); err == nil {
		t.Fatal("query succeeded on a killed server")
	}
	pg.Restart()
	if n, err := query(); err != nil || n != 2 {
		t.Fatalf("after restart: %d rows, %v; want 2 rows", n, err)
	}
}
