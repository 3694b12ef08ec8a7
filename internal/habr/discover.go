package habr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// DefaultFeeds are the feeds discovery reads unless configured otherwise: all new articles and
// all news, in Russian and in English, 100 items each (Habr's default of 20 would miss items
// between runs on a busy day). An article's language decides the feed that lists it, so the
// Russian feeds alone never register an English article.
var DefaultFeeds = []string{
	"/ru/rss/articles/?fl=ru&limit=100",
	"/ru/rss/news/?fl=ru&limit=100",
	"/en/rss/articles/?fl=en&limit=100",
	"/en/rss/news/?fl=en&limit=100",
}

// FeedPath checks one configured feed and returns it as a path on the Habr origin: a path such
// as "/ru/rss/hubs/go/articles/?fl=ru", or a full https://habr.com/... URL, which is reduced to
// its path and query (feeds are fetched from HABR_BASE_URL, which may be a mirror or a fake).
func FeedPath(feed string) (string, error) {
	feed = strings.TrimSpace(feed)
	u, err := url.Parse(feed)
	switch {
	case err != nil:
		return "", fmt.Errorf("feed %q is not a URL or path: %w", feed, err)
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(u.Path, "/"):
	case (u.Scheme == "https" || u.Scheme == "http") && strings.EqualFold(strings.TrimPrefix(u.Hostname(), "www."), canonicalHost):
		if u.Path == "" {
			u.Path = "/"
		}
	default:
		return "", fmt.Errorf("feed %q: want a path on Habr (/ru/rss/...) or an https://habr.com/... URL", feed)
	}
	if u.User != nil {
		return "", fmt.Errorf("feed %q: credentials in URL", u.Redacted())
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return path, nil
}

// Fetcher gets a page or feed from Habr's origin; *fetch.Client is the real one.
type Fetcher interface {
	Get(ctx context.Context, ref string) (*fetch.Response, error)
}

// Discoverer registers the publications announced by Habr's RSS feeds.
type Discoverer struct {
	Pool    *pgxpool.Pool
	Fetcher Fetcher
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Feeds are paths on the Habr origin (see FeedPath); DefaultFeeds when empty.
	Feeds []string
}

// DiscoverStats sums up a discovery run.
type DiscoverStats struct {
	Feeds, FeedsFailed int
	Items, New, Bad    int
}

// ErrFeedsFailed is returned (wrapped) when at least one feed could not be read; every item of
// every readable feed has been registered all the same.
var ErrFeedsFailed = errors.New("some feeds could not be read")

// Run reads every feed and registers new publications as extract_pending. A feed that cannot
// be fetched or parsed is reported and skipped; a malformed item is reported with its position
// and skipped; neither stops the other feeds or items.
func (d *Discoverer) Run(ctx context.Context) (DiscoverStats, error) {
	feeds := d.Feeds
	if len(feeds) == 0 {
		feeds = DefaultFeeds
	}
	var st DiscoverStats
	var failed []string
	for _, feed := range feeds {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		st.Feeds++
		items, bad, err := d.readFeed(ctx, feed)
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			st.FeedsFailed++
			failed = append(failed, feed)
			d.Log.Error("feed skipped", "feed", feed, "error", err)
			continue
		}
		for _, b := range bad {
			d.Log.Warn("feed item skipped", "feed", feed, "position", b.Index, "link", b.Link, "guid", b.GUID, "error", b.Err)
		}
		n, err := register(ctx, d.Pool, feed, items)
		if err != nil {
			return st, err
		}
		st.Items += len(items)
		st.New += n
		st.Bad += len(bad)
		d.Metrics.RecordsExtracted.WithLabelValues(entity).Add(float64(n))
		d.Metrics.Processed.WithLabelValues(entity, "discovered").Add(float64(n))
		if len(bad) > 0 {
			d.Metrics.Processed.WithLabelValues(entity, "feed_item_skipped").Add(float64(len(bad)))
		}
		d.Log.Info("feed read", "feed", feed, "items", len(items), "new", n, "known", len(items)-n, "skipped", len(bad))
	}
	if len(failed) > 0 {
		if len(failed) == len(feeds) {
			return st, fmt.Errorf("%w: all %d (%v); nothing was registered", ErrFeedsFailed, len(feeds), failed)
		}
		return st, fmt.Errorf("%w: %d of %d (%v); the other feeds were read: %d new publications registered",
			ErrFeedsFailed, len(failed), len(feeds), failed, st.New)
	}
	return st, nil
}

func (d *Discoverer) readFeed(ctx context.Context, feed string) ([]FeedItem, []ItemError, error) {
	resp, err := d.Fetcher.Get(ctx, feed)
	if err != nil {
		return nil, nil, err
	}
	items, bad, err := ParseFeed(bytes.NewReader(resp.Body))
	if err != nil {
		return nil, nil, fmt.Errorf("feed %s: %w", feed, err)
	}
	return items, bad, nil
}
