package habr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// Publication is a registered Habr publication (a row of habr_publications).
type Publication struct {
	ID           int64
	URL          string
	Title        string
	Author       string // login: the feed's dc:creator, replaced by the page's once extracted
	PublishedAt  *time.Time
	PublishedRaw string
	// FeedCategories are the feed item's <category> values as received: hubs and tags mixed,
	// or none, depending on the feed.
	FeedCategories []string
	Feed           string
	DiscoveredAt   time.Time
	// Metadata read from the page by the last extraction (empty before it).
	AuthorName  string
	Hubs        []string
	Tags        []string
	Company     Company
	Translation Translation

	Status          status.Status
	Attempts        int
	LastError       string
	StatusChangedAt time.Time
	// Retries used since the publication last entered extract_failed, and when the next
	// attempt is due (extract_failed only).
	Retries       int
	NextAttemptAt *time.Time
	// AttemptStartedAt is set while an attempt is in progress, or after one whose process died.
	AttemptStartedAt *time.Time
}

// Markdown is the extracted text of a publication (a row of habr_markdown).
type Markdown struct {
	Title            string
	Text             string
	ExtractorVersion string
	ContentHash      string
	ExtractedAt      time.Time
}

// batchSender is a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// register inserts the items that are not registered yet, in status extract_pending, and
// returns how many were new. A known publication is never touched: rediscovery changes neither
// its status nor its data.
func register(ctx context.Context, db batchSender, feed string, items []FeedItem) (int, error) {
	if len(items) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	for _, it := range items {
		var published *time.Time
		if !it.PublishedAt.IsZero() {
			published = &it.PublishedAt
		}
		b.Queue(`INSERT INTO habr_publications (id, url, title, author, published_at, published_raw, feed_categories, feed)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
			it.ID, it.URL, it.Title, it.Author, published, it.PublishedRaw, nonNil(it.Categories), feed)
	}
	br := db.SendBatch(ctx, b)
	defer br.Close()
	inserted := 0
	for range items {
		tag, err := br.Exec()
		if err != nil {
			return inserted, fmt.Errorf("register publications: %w", err)
		}
		inserted += int(tag.RowsAffected())
	}
	return inserted, br.Close()
}

const publicationColumns = `id, url, title, author, published_at, published_raw, feed_categories, feed,
discovered_at, author_name, hubs, tags, company_alias, company_name, original_author, original_url,
status, attempts, coalesce(last_error, ''), status_changed_at, retries, next_attempt_at, attempt_started_at`

func scanPublication(row pgx.CollectableRow) (Publication, error) {
	var p Publication
	var st string
	err := row.Scan(&p.ID, &p.URL, &p.Title, &p.Author, &p.PublishedAt, &p.PublishedRaw, &p.FeedCategories, &p.Feed,
		&p.DiscoveredAt, &p.AuthorName, &p.Hubs, &p.Tags, &p.Company.Alias, &p.Company.Name,
		&p.Translation.OriginalAuthor, &p.Translation.OriginalURL,
		&st, &p.Attempts, &p.LastError, &p.StatusChangedAt, &p.Retries, &p.NextAttemptAt, &p.AttemptStartedAt)
	p.Status = status.Status(st)
	return p, err
}

// loadPublications returns the publications with the given ids, in id order.
func loadPublications(ctx context.Context, db status.DB, ids []int64) ([]Publication, error) {
	rows, err := db.Query(ctx, `SELECT `+publicationColumns+` FROM habr_publications WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("load publications: %w", err)
	}
	pubs, err := pgx.CollectRows(rows, scanPublication)
	if err != nil {
		return nil, fmt.Errorf("load publications: %w", err)
	}
	return pubs, nil
}

// GetPublication returns one publication and its Markdown (nil when not extracted).
func GetPublication(ctx context.Context, db status.DB, id int64) (Publication, *Markdown, error) {
	rows, err := db.Query(ctx, `SELECT `+publicationColumns+` FROM habr_publications WHERE id = $1`, id)
	if err != nil {
		return Publication{}, nil, fmt.Errorf("publication %d: %w", id, err)
	}
	p, err := pgx.CollectExactlyOneRow(rows, scanPublication)
	if err != nil {
		return Publication{}, nil, fmt.Errorf("publication %d: %w", id, err)
	}
	var md Markdown
	err = db.QueryRow(ctx, `SELECT title, markdown, extractor_version, content_hash, extracted_at
FROM habr_markdown WHERE publication_id = $1`, id).Scan(&md.Title, &md.Text, &md.ExtractorVersion, &md.ContentHash, &md.ExtractedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, nil, nil
	}
	if err != nil {
		return p, nil, fmt.Errorf("markdown of publication %d: %w", id, err)
	}
	return p, &md, nil
}

// cachedPage returns the cached HTML of url if it is still within its TTL.
func cachedPage(ctx context.Context, db status.DB, url string) (body string, ok bool, err error) {
	err = db.QueryRow(ctx, `SELECT body FROM habr_html_cache WHERE url = $1 AND expires_at > now()`, url).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("html cache %s: %w", url, err)
	}
	return body, true, nil
}

// cachePage stores fetched HTML for ttl, replacing an older copy.
func cachePage(ctx context.Context, db status.DB, url, contentType, body string, ttl time.Duration) error {
	_, err := db.Exec(ctx, `INSERT INTO habr_html_cache (url, content_type, body, expires_at)
VALUES ($1, $2, $3, now() + $4::interval)
ON CONFLICT (url) DO UPDATE SET content_type = EXCLUDED.content_type, body = EXCLUDED.body,
    fetched_at = now(), expires_at = EXCLUDED.expires_at`, url, contentType, body, ttl)
	if err != nil {
		return fmt.Errorf("cache html %s: %w", url, err)
	}
	return nil
}

// purgeExpiredPages deletes cache entries past their TTL and returns how many went.
func purgeExpiredPages(ctx context.Context, db status.DB) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM habr_html_cache WHERE expires_at <= now()`)
	if err != nil {
		return 0, fmt.Errorf("purge html cache: %w", err)
	}
	return tag.RowsAffected(), nil
}

// saveExtracted stores the Markdown and the page's metadata and moves the publication to
// extracted, ending its attempt, in one transaction; if the publication left status from in the
// meantime, nothing is stored.
func saveExtracted(ctx context.Context, db status.Beginner, p Publication, a Article, c status.Change) (bool, error) {
	sum := sha256.Sum256([]byte(a.Markdown))
	moved := false
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		moved, err = Machine.Move(ctx, tx, p.ID, p.Status, Extracted, c)
		if err != nil || !moved {
			return err
		}
		title := a.Title
		if title == "" {
			title = p.Title
		}
		_, err = tx.Exec(ctx, `INSERT INTO habr_markdown (publication_id, title, markdown, extractor_version, content_hash)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (publication_id) DO UPDATE SET title = EXCLUDED.title, markdown = EXCLUDED.markdown,
    extractor_version = EXCLUDED.extractor_version, content_hash = EXCLUDED.content_hash, extracted_at = now()`,
			p.ID, title, a.Markdown, ExtractorVersion, hex.EncodeToString(sum[:]))
		if err != nil {
			return fmt.Errorf("store markdown of %d: %w", p.ID, err)
		}
		// The page is the authority on its metadata; the feed's author and time stay when the
		// page does not show them.
		var published *time.Time
		if !a.PublishedAt.IsZero() {
			published = &a.PublishedAt
		}
		_, err = tx.Exec(ctx, `UPDATE habr_publications SET author = coalesce(NULLIF($2, ''), author),
    published_at = coalesce(published_at, $3), author_name = $4, hubs = $5, tags = $6,
    company_alias = $7, company_name = $8, original_author = $9, original_url = $10
WHERE id = $1`, p.ID, a.Author, published, a.AuthorName, nonNil(a.Hubs), nonNil(a.Tags),
			a.Company.Alias, a.Company.Name, a.Translation.OriginalAuthor, a.Translation.OriginalURL)
		if err != nil {
			return fmt.Errorf("store metadata of %d: %w", p.ID, err)
		}
		return nil
	})
	return moved, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
