package habr

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// The benchmarks run per article fixture and all report throughput in page
// bytes, so their MB/s compare directly:
//
//	BenchmarkExtract          our whole Extract: parse the page, find the
//	                          body, read metadata, clean, convert
//	BenchmarkConvertBodyOnly  the converter alone, same options, on the raw
//	                          body HTML (no page parse, no cleanup)
//	BenchmarkParsePage        html.Parse of the whole page, the part of our
//	                          overhead that grows with the page, not the body
//	BenchmarkOverhead         the three above in the same iterations, so that
//	                          a busy machine slows all of them alike; it
//	                          reports each in ms/op and our share in percent
//
// Run with: go test -run '^$' -bench . -benchmem ./internal/habr/

func BenchmarkExtract(b *testing.B) {
	e := NewExtractor()
	for _, p := range articlePages {
		page := readFixture(b, "html", p.file)
		b.Run(strings.TrimSuffix(p.file, ".html"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				if _, err := e.Extract(p.url, page); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkConvertBodyOnly(b *testing.B) {
	conv := newConverter()
	for _, p := range articlePages {
		page := readFixture(b, "html", p.file)
		body := bodyHTML(b, page)
		b.Run(strings.TrimSuffix(p.file, ".html"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				if _, err := conv.ConvertString(body, converter.WithDomain(habrRoot)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParsePage(b *testing.B) {
	for _, p := range articlePages {
		page := readFixture(b, "html", p.file)
		b.Run(strings.TrimSuffix(p.file, ".html"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				if _, err := html.Parse(bytes.NewReader(page)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOverhead(b *testing.B) {
	e := NewExtractor()
	conv := newConverter()
	for _, p := range articlePages {
		page := readFixture(b, "html", p.file)
		body := bodyHTML(b, page)
		b.Run(strings.TrimSuffix(p.file, ".html"), func(b *testing.B) {
			var parse, extract, convert time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := html.Parse(bytes.NewReader(page)); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := e.Extract(p.url, page); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if _, err := conv.ConvertString(body, converter.WithDomain(habrRoot)); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				parse, extract, convert = parse+t1.Sub(t0), extract+t2.Sub(t1), convert+t3.Sub(t2)
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / n }
			b.ReportMetric(ms(extract), "extract-ms/op")
			b.ReportMetric(ms(parse), "parse-ms/op")
			b.ReportMetric(ms(convert), "convert-ms/op")
			// Extract over the bare conversion, all of it and without the
			// page parse (finding the body, metadata, cleanup).
			b.ReportMetric(100*float64(extract-convert)/float64(convert), "overhead-%")
			b.ReportMetric(100*float64(extract-parse-convert)/float64(convert), "own-%")
		})
	}
}

// bodyHTML returns the outer HTML of the page's body container, untouched.
func bodyHTML(b *testing.B, page []byte) string {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		b.Fatal(err)
	}
	body, _ := findBody(doc)
	if body == nil {
		b.Fatal("no body container")
	}
	s, err := goquery.OuterHtml(body)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
