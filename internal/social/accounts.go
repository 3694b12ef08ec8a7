package social

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/status"
)

// Network is the only network so far; the tables and machines are ready for more.
const Network = "instagram"

// Access modes: how the platform lets us read an account.
const (
	// Connected: the account's own token (profile, media, comments, stories).
	Connected = "connected"
	// Discovery: business_discovery through a connected account's token (public profile and
	// media of another business or creator account; no comments, no stories).
	Discovery = "discovery"
)

var (
	usernameRe = regexp.MustCompile(`^[A-Za-z0-9._]{1,30}$`)
	igIDRe     = regexp.MustCompile(`^[0-9]{5,25}$`)
)

// NewAccount is an account to track: a username for business discovery, or a connected
// account's IG user id with its token.
type NewAccount struct {
	Username string
	IGUserID string
	// Token is a connected account's access token. Secret: sealed before it is stored.
	Token string
	// Via names the connected account (username or IG user id) whose token reads a discovery
	// account; empty means the oldest connected account in good standing.
	Via string
}

// Validate says what is wrong with a, naming the field.
func (a NewAccount) Validate() error {
	switch {
	case a.Token != "" && a.IGUserID == "":
		return errors.New("a token needs --ig-user-id: the connected account's IG user id")
	case a.IGUserID != "" && !igIDRe.MatchString(a.IGUserID):
		return fmt.Errorf("ig_user_id %q is not an IG user id (digits only)", a.IGUserID)
	case a.IGUserID != "" && a.Token == "":
		return fmt.Errorf("connected account %s: a token is required", a.IGUserID)
	case a.IGUserID != "" && strings.ContainsAny(a.Token, " \t\r\n"):
		return fmt.Errorf("connected account %s: the token contains white space", a.IGUserID)
	case a.IGUserID != "" && a.Via != "":
		return fmt.Errorf("connected account %s: --via is for discovery accounts", a.IGUserID)
	case a.IGUserID == "" && a.Username == "":
		return errors.New("a username (business discovery) or an IG user id with a token (connected) is required")
	case a.Username != "" && !usernameRe.MatchString(a.Username):
		return fmt.Errorf("username %q is not an Instagram username (letters, digits, . and _, at most 30)", a.Username)
	}
	return nil
}

// AddResult is what Add did.
type AddResult struct {
	ID      int64
	Access  string
	Created bool
	// Renewed: a connected account's token was replaced; Resumed: it needed attention and was
	// put back to profile_pending.
	Renewed, Resumed bool
}

// Add registers an account, or updates one already tracked (a new token, a new viewer). It
// is idempotent: adding the same account twice changes nothing the second time.
func Add(ctx context.Context, pool *pgxpool.Pool, sealer *Sealer, a NewAccount, actor string) (AddResult, error) {
	if err := a.Validate(); err != nil {
		return AddResult{}, err
	}
	if a.IGUserID != "" {
		return addConnected(ctx, pool, sealer, a, actor)
	}
	return addDiscovery(ctx, pool, a)
}

func addConnected(ctx context.Context, pool *pgxpool.Pool, sealer *Sealer, a NewAccount, actor string) (AddResult, error) {
	sealed, err := sealer.Seal(a.Token, Network, a.IGUserID)
	if err != nil {
		return AddResult{}, err
	}
	res := AddResult{Access: Connected}
	fp := Fingerprint(a.Token)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var oldFP *string
		var st string
		err := tx.QueryRow(ctx, `SELECT id, token_fingerprint, status FROM social_accounts WHERE network = $1 AND ig_user_id = $2 FOR UPDATE`,
			Network, a.IGUserID).Scan(&res.ID, &oldFP, &st)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			res.Created = true
			return tx.QueryRow(ctx, `INSERT INTO social_accounts (network, access, username, ig_user_id, token_sealed, token_fingerprint, status)
VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6, $7) RETURNING id`, Network, Connected, a.Username, a.IGUserID, sealed, fp, string(ProfilePending)).Scan(&res.ID)
		case err != nil:
			return fmt.Errorf("look up account %s: %w", a.IGUserID, err)
		}
		if oldFP != nil && *oldFP == fp {
			return nil // the same token again: nothing to do
		}
		res.Renewed = true
		// A discovery account whose id was learned becomes connected: its own token reads more.
		if _, err := tx.Exec(ctx, `UPDATE social_accounts SET access = $2, via_account_id = NULL, token_sealed = $3, token_fingerprint = $4,
username = coalesce(NULLIF($5, ''), username) WHERE id = $1`, res.ID, Connected, sealed, fp, a.Username); err != nil {
			return fmt.Errorf("store the token of account %s: %w", a.IGUserID, err)
		}
		if status.Status(st) == NeedsAttention {
			moved, err := Accounts.Move(ctx, tx, res.ID, NeedsAttention, ProfilePending, status.Change{Reason: "token renewed", Actor: actor})
			res.Resumed = moved
			return err
		}
		return nil
	})
	return res, err
}

func addDiscovery(ctx context.Context, pool *pgxpool.Pool, a NewAccount) (AddResult, error) {
	res := AddResult{Access: Discovery}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var existing int64
		var access string
		err := tx.QueryRow(ctx, `SELECT id, access FROM social_accounts WHERE network = $1 AND lower(username) = lower($2) ORDER BY access LIMIT 1`,
			Network, a.Username).Scan(&existing, &access)
		if err == nil && access == Connected {
			res.ID, res.Access = existing, Connected
			return nil // already read with its own token, which gives more
		}
		via, err := viewer(ctx, tx, a.Via)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO social_accounts (network, access, username, via_account_id, status)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (network, lower(username)) WHERE access = 'discovery' DO UPDATE SET via_account_id = EXCLUDED.via_account_id`,
			Network, Discovery, a.Username, via, string(ProfilePending))
		if err != nil {
			return fmt.Errorf("register %s: %w", a.Username, err)
		}
		res.Created = tag.RowsAffected() == 1 && existing == 0
		return tx.QueryRow(ctx, `SELECT id FROM social_accounts WHERE network = $1 AND lower(username) = lower($2) AND access = $3`,
			Network, a.Username, Discovery).Scan(&res.ID)
	})
	return res, err
}

// viewer finds the connected account whose token reads a discovery account.
func viewer(ctx context.Context, tx pgx.Tx, via string) (int64, error) {
	var id int64
	var err error
	if via == "" {
		err = tx.QueryRow(ctx, `SELECT id FROM social_accounts WHERE network = $1 AND access = $2 AND status <> $3 ORDER BY id LIMIT 1`,
			Network, Connected, string(NeedsAttention)).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, errors.New("business discovery reads other accounts through a connected account's token: add a connected account first (--ig-user-id with a token)")
		}
	} else {
		err = tx.QueryRow(ctx, `SELECT id FROM social_accounts WHERE network = $1 AND access = $2 AND (ig_user_id = $3 OR lower(username) = lower($3))`,
			Network, Connected, via).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("--via %s: no connected account by that username or IG user id", via)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("find the viewer account: %w", err)
	}
	return id, nil
}

// LineError is one import line that was not registered, and why.
type LineError struct {
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// ImportResult sums up an import.
type ImportResult struct {
	Created, Updated, Unchanged int
	Failed                      []LineError
}

// Import registers the accounts of a CSV file with a header naming some of the columns
// username, ig_user_id, token, via (a file holding tokens is a secret: mount it, never commit
// it). Each line is registered on its own: a bad line is reported with its number and cause and
// never stops the others.
func Import(ctx context.Context, pool *pgxpool.Pool, sealer *Sealer, r io.Reader, actor string) (ImportResult, error) {
	var res ImportResult
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return res, fmt.Errorf("read the header line: %w", err)
	}
	cols := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch h {
		case "username", "ig_user_id", "token", "via":
			cols[h] = i
		default:
			return res, fmt.Errorf("header: unknown column %q (want username, ig_user_id, token, via)", h)
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := cols[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			res.Failed = append(res.Failed, LineError{Line: line, Err: err})
			continue
		}
		a := NewAccount{Username: get(rec, "username"), IGUserID: get(rec, "ig_user_id"), Token: get(rec, "token"), Via: get(rec, "via")}
		out, err := Add(ctx, pool, sealer, a, actor)
		switch {
		case err != nil && ctx.Err() != nil:
			return res, ctx.Err()
		case err != nil:
			res.Failed = append(res.Failed, LineError{Line: line, Err: err})
		case out.Created:
			res.Created++
		case out.Renewed:
			res.Updated++
		default:
			res.Unchanged++
		}
	}
}
