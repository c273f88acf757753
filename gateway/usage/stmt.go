package usage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// execStmt is a prepared statement run with positional arguments; exec
// reports the rows it changed.
type execStmt interface {
	exec(ctx context.Context, args []driver.NamedValue) (int64, error)
	Close() error
}

// sqlStmt runs through database/sql: replay's statements, prepared on its
// transaction.
type sqlStmt struct{ *sql.Stmt }

func (s sqlStmt) exec(ctx context.Context, args []driver.NamedValue) (int64, error) {
	return changes(s.ExecContext(ctx, argValues(args)...))
}

// argValues are args' values in order, as database/sql takes them.
func argValues(args []driver.NamedValue) []any {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return vals
}

// driverStmt is a statement of the SQLite driver itself, prepared on the
// writer's pinned connection and run only inside that connection's Raw
// (Ledger.apply), which holds it for the writer. database/sql's
// Stmt.ExecContext allocates a fresh argument list and converts each of
// the insert's 22 arguments for every row, and takes the connection's
// locks for every statement (docs/BENCHMARK.md, sixth round).
type driverStmt struct {
	driver.Stmt
	x driver.StmtExecContext
}

func prepareDriverStmt(ctx context.Context, dc any, query string) (driverStmt, error) {
	p, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return driverStmt{}, fmt.Errorf("usage: driver connection %T cannot prepare with a context", dc)
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return driverStmt{}, err
	}
	x, ok := st.(driver.StmtExecContext)
	if !ok {
		_ = st.Close()
		return driverStmt{}, fmt.Errorf("usage: driver statement %T cannot execute with a context", st)
	}
	return driverStmt{st, x}, nil
}

func (s driverStmt) exec(ctx context.Context, args []driver.NamedValue) (int64, error) {
	res, err := s.x.ExecContext(ctx, args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// stmtPreparer is where a statement is prepared: the writer's driver
// connection (inside Raw) or replay's *sql.Tx.
type stmtPreparer interface {
	prepare(ctx context.Context, query string) (execStmt, error)
}

type driverConn struct{ dc any }

func (c driverConn) prepare(ctx context.Context, q string) (execStmt, error) {
	return prepareDriverStmt(ctx, c.dc, q)
}

type txPreparer struct{ tx *sql.Tx }

func (c txPreparer) prepare(ctx context.Context, q string) (execStmt, error) {
	st, err := c.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return sqlStmt{st}, nil
}

// namedArgs sets args to vals, positionally, reusing its storage.
func namedArgs(args []driver.NamedValue, vals ...driver.Value) []driver.NamedValue {
	args = args[:0]
	for i, v := range vals {
		args = append(args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return args
}

// rowArgs fills a statement's argument list in place, one position at a
// time, for the writer's one row after another. A string or int64 equal to
// the value already at its position is left as it is: storing either in a
// driver.Value allocates (an int64 from 256 on), and from one row to the
// next most columns repeat (key, alias, provider, model, status, attempts).
// That was a tenth of a request's allocations (docs/BENCHMARK.md,
// "eleventh round").
type rowArgs []driver.NamedValue

// sized returns a with n positions, numbered; positions it already had keep
// their values for the comparisons.
func (a rowArgs) sized(n int) rowArgs {
	if cap(a) < n {
		a = append(a[:cap(a)], make(rowArgs, n-cap(a))...)
	}
	a = a[:n]
	for i := range a {
		a[i].Ordinal = i + 1
	}
	return a
}

func (a rowArgs) str(i int, s string) {
	if old, ok := a[i].Value.(string); !ok || old != s {
		a[i].Value = s
	}
}

func (a rowArgs) int(i int, v int64) {
	if old, ok := a[i].Value.(int64); !ok || old != v {
		a[i].Value = v
	}
}

func (a rowArgs) bool(i int, v bool) { a[i].Value = v } // no allocation: a bool is boxed statically
