package habr

import (
	"bytes"
	"strings"
	"testing"

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
//
// Compare with: go test -run '^$' -bench . -benchmem ./internal/habr/

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
