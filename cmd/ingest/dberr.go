package main

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// refusedConnection tells a server that refused the connection for a reason only a change of
// configuration mends (wrong password, unknown role or database, not allowed by pg_hba.conf)
// from one that could not be reached, which the next run may find back. msg never holds the
// password.
func refusedConnection(err error, cfg *pgxpool.Config) (msg string, refused bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	c := cfg.ConnConfig
	switch pgErr.Code {
	case "28P01": // invalid_password
		return fmt.Sprintf("Postgres refused the password of user %q (DATABASE_URL or PGPASSWORD)", c.User), true
	case "28000": // invalid_authorization_specification: unknown role, pg_hba.conf rejects
		return fmt.Sprintf("Postgres refused user %q: %s", c.User, pgErr.Message), true
	case "3D000": // invalid_catalog_name
		return fmt.Sprintf("database %q does not exist on %s:%d (DATABASE_URL)", c.Database, c.Host, c.Port), true
	case "42501": // insufficient_privilege, e.g. no CONNECT on the database
		return fmt.Sprintf("Postgres refused user %q on database %q: %s", c.User, c.Database, pgErr.Message), true
	}
	return "", false
}
