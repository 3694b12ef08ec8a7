package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingest-dev/ingest/internal/social"
)

func writeAccount(out io.Writer, d social.AccountDetail) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "account\tid:%d %s (ig %s)\n", d.ID, accountName(d.AccountReport), shown(d.IGUserID))
	fmt.Fprintf(w, "access\t%s", d.Access)
	if d.Via != "" {
		fmt.Fprintf(w, " through %s's token", shown(d.Via))
	}
	if d.TokenFingerprint != "" {
		fmt.Fprintf(w, " (token fingerprint %s; the token itself is sealed)", d.TokenFingerprint)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "status\t%s\n", d.Status)
	writeLastError(w, d.LastError, d.ReasonCode)
	if d.NextSyncAt != nil {
		fmt.Fprintf(w, "next sync\t%s\n", d.NextSyncAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "name\t%s\n", shown(d.Name))
	fmt.Fprintf(w, "bio\t%s\n", shownCut(d.Biography, 160))
	fmt.Fprintf(w, "website\t%s\n", shown(d.Website))
	fmt.Fprintf(w, "counts\tfollowers %s, follows %s, media %s\n", optInt(d.Followers), optInt(d.Follows), optInt(d.MediaCount))
	fmt.Fprintf(w, "calls\tlast cycle %s; this cycle %s\n", callsLine(nil, d.LastCycleCalls), callsLine(d.CycleCalls, nil))
	if d.HighWaterMark != nil {
		fmt.Fprintf(w, "posts up to\t%s (high-water mark)\n", d.HighWaterMark.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w, "\ncapabilities")
	for _, c := range d.Capabilities {
		mark := "no"
		if c.Synced {
			mark = "yes"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", mark, c.What, shown(c.Detail))
	}
	fmt.Fprintln(w, "\ncounts over time")
	for _, c := range d.Counts {
		fmt.Fprintf(w, "  %s\tfollowers %s\tfollows %s\tmedia %s\n", c.At.UTC().Format(time.RFC3339), optInt(c.Followers), optInt(c.Follows), optInt(c.Media))
	}
	fmt.Fprintln(w, "\nrecent posts")
	for _, p := range d.Recent {
		at := "-"
		if p.PostedAt != nil {
			at = p.PostedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", shown(p.MediaID), p.Kind, p.Status, at, shownCut(p.Caption, 60))
	}
	fmt.Fprintln(w, "\nhistory")
	writeHistory(w, d.History)
	_ = w.Flush()
}

// writeLastError shows why a record stands where it does: its last error and, beside it, the
// reason code that classifies it.
func writeLastError(w io.Writer, lastError, code string) {
	if lastError != "" {
		fmt.Fprintf(w, "last error\t%s\n", shown(lastError))
	}
	if code != "" {
		fmt.Fprintf(w, "reason code\t%s\n", shown(code))
	}
}

func writePost(out io.Writer, d social.PostDetail) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "post\t%s (id %d) of %s\n", shown(d.MediaID), d.ID, shown(d.Account))
	fmt.Fprintf(w, "status\t%s\n", d.Status)
	writeLastError(w, d.LastError, d.ReasonCode)
	fmt.Fprintf(w, "kind\t%s (media_type %s, media_product_type %s, %s)\n", d.Kind, shown(d.MediaType), shown(d.ProductType), d.Surface)
	if d.PostedAt != nil {
		fmt.Fprintf(w, "posted\t%s UTC (as received: %s)\n", d.PostedAt.UTC().Format(time.RFC3339), shown(d.PostedRaw))
	}
	fmt.Fprintf(w, "permalink\t%s\n", shown(d.Permalink))
	fmt.Fprintf(w, "caption\t%s\n", shownCut(d.Caption, 200))
	fmt.Fprintf(w, "hashtags\t%s\n", shown(strings.Join(d.Hashtags, " ")))
	fmt.Fprintf(w, "mentions\t%s\n", shown(strings.Join(d.Mentions, " ")))
	fmt.Fprintf(w, "counts\tlikes %s, comments %s\n", optInt(d.Likes), optInt(d.CommentsCount))
	if d.MediaURLMissing {
		fmt.Fprintln(w, "media_url\tomitted by the platform (copyrighted material)")
	}
	fmt.Fprintf(w, "raw pages\t%d\n", d.RawPages)
	fmt.Fprintln(w, "\nmedia")
	for _, m := range d.Media {
		u := "(no media_url)"
		if m.URL != nil {
			u, _, _ = strings.Cut(*m.URL, "?")
			u += "?… (CDN URL, signed per call)"
		}
		fmt.Fprintf(w, "  %d\t%s\t%s\t%s\n", m.Position, shown(m.MediaID), shown(m.MediaType), shown(u))
	}
	fmt.Fprintln(w, "\nenrichment")
	for prov, st := range d.Enrichment {
		fmt.Fprintf(w, "  %s\t%s\n", shown(prov), shownCut(st, 120))
	}
	for _, l := range d.Labels {
		if strings.HasPrefix(l.Subject, "comment:") {
			continue // shown with its comment
		}
		conf := ""
		if l.Confidence != nil {
			conf = fmt.Sprintf("%.1f%%", *l.Confidence)
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", shown(l.Provider), shown(l.Subject), shown(l.Label), conf)
	}
	fmt.Fprintf(w, "\ncomments (%d in all, newest %d threads shown)\n", d.CommentsTotal, len(d.Comments))
	_ = w.Flush()
	for _, c := range d.Comments {
		writeComment(out, c, "  ")
		for _, r := range c.Replies {
			writeComment(out, r, "      ↳ ")
		}
	}
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if len(d.Rejects) > 0 {
		fmt.Fprintln(w, "\nfailed validation")
		for _, x := range d.Rejects {
			fmt.Fprintf(w, "  %s %s\t%s\n", x.Kind, shown(x.PlatformID), shown(x.Reason))
		}
	}
	fmt.Fprintln(w, "\nhistory")
	writeHistory(w, d.History)
	_ = w.Flush()
}

func writeComment(out io.Writer, c social.CommentLine, indent string) {
	labels := ""
	for _, l := range c.Labels {
		labels += " [" + shownCut(l.Label, 80) + "]"
	}
	hidden := ""
	if c.Hidden {
		hidden = " (hidden)"
	}
	who := "(no username)"
	if c.Username != "" {
		who = "@" + shownCut(c.Username, 80)
	}
	fmt.Fprintf(out, "%s%s %s: %s%s%s\n", indent, shown(c.PostedRaw), who, shownCut(c.Text, 120), hidden, labels)
}
