package main

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

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

// defaultConnectTimeout bounds the first connection when DATABASE_URL sets no connect_timeout.
const defaultConnectTimeout = 15 * time.Second

// connectTimeout is how long the first connection may take: DATABASE_URL's connect_timeout,
// else defaultConnectTimeout.
func connectTimeout(cfg *pgxpool.Config) time.Duration {
	if t := cfg.ConnConfig.ConnectTimeout; t > 0 {
		return t
	}
	return defaultConnectTimeout
}

// describeHost is the server's address, host:port (a unix socket's directory and port).
func describeHost(cfg *pgxpool.Config) string {
	return net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
}

// urlScheme is a URL's scheme as RFC 3986 spells it; anything else before "://" is not shown,
// since it could be part of a secret.
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// checkDBScheme refuses a URL of another database (mysql://, sqlite://) by naming its scheme:
// pgx would read it as a keyword/value string and fail with "invalid keyword/value".
func checkDBScheme(dsn string) error {
	m := urlScheme.FindStringSubmatch(strings.TrimSpace(dsn))
	if m == nil {
		return nil // keyword/value (host=... dbname=...), which pgx parses
	}
	switch strings.ToLower(m[1]) {
	case "postgres", "postgresql":
		return nil
	}
	return configError{fmt.Sprintf("DATABASE_URL has the scheme %s://, not Postgres's: want postgres:// or postgresql:// (e.g. postgres://ingest@db.example:5432/ingest)", m[1])}
}
