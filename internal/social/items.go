package social

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// timeLayout reads the platform's timestamps: ISO 8601 with a colon-less offset
// ("2017-08-31T19:16:02+0000"), which time.RFC3339 refuses.
const timeLayout = "2006-01-02T15:04:05-0700"

// parseTime reads a platform timestamp, also accepting RFC 3339 (an offset with a colon, or Z).
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("no timestamp")
	}
	if t, err := time.Parse(timeLayout, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("timestamp %q is not ISO 8601", s)
}

// listedItem is what a listing needs of a media item before normalization: its identity, time,
// comment count and a hash of everything but its CDN URLs.
type listedItem struct {
	ID            string
	TakenAt       *time.Time
	TakenRaw      string
	CommentsCount *int
	Hash          string
}

// urlFields change on every call (signed CDN parameters): never part of identity or change
// detection.
var urlFields = map[string]bool{"media_url": true, "thumbnail_url": true, "profile_picture_url": true}

func readListed(raw json.RawMessage) (listedItem, error) {
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return listedItem{}, fmt.Errorf("item is not a JSON object: %w", err)
	}
	id, _ := v["id"].(string)
	if id == "" {
		return listedItem{}, errors.New("item has no id")
	}
	it := listedItem{ID: id}
	it.TakenRaw, _ = v["timestamp"].(string)
	if t, err := parseTime(it.TakenRaw); err == nil {
		it.TakenAt = &t
	}
	if n, ok := v["comments_count"].(float64); ok {
		c := int(n)
		it.CommentsCount = &c
	}
	stripURLs(v)
	b, _ := json.Marshal(v) // map keys sorted: a canonical form
	sum := sha256.Sum256(b)
	it.Hash = hex.EncodeToString(sum[:])
	return it, nil
}

func stripURLs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if urlFields[k] {
				delete(x, k)
			} else {
				stripURLs(e)
			}
		}
	case []any:
		for _, e := range x {
			stripURLs(e)
		}
	}
}

// lowerTrim lower-cases a hashtag or mention.
func lowerTrim(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
