package habr

import (
	"bytes"
	"runtime"
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
//	                          reports each in ms per page and our share in
//	                          percent, per page and over all of them, by
//	                          wall time and (on Linux) by the thread's CPU
//	                          time
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
	type fixture struct {
		url  string
		page []byte
		body string
	}
	var all []fixture
	for _, p := range articlePages {
		page := readFixture(b, "html", p.file)
		all = append(all, fixture{p.url, page, bodyHTML(b, page)})
	}
	run := func(b *testing.B, pages []fixture) {
		// The thread's CPU time is read around the extraction and the conversion too: on a
		// machine shared with other jobs, wall time also counts the time others had the CPU.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var parse, extract, convert, extractCPU, convertCPU time.Duration
		_, cpuOK := threadCPU()
		for b.Loop() {
			for _, f := range pages {
				t0 := time.Now()
				if _, err := html.Parse(bytes.NewReader(f.page)); err != nil {
					b.Fatal(err)
				}
				c1, _ := threadCPU()
				t1 := time.Now()
				if _, err := e.Extract(f.url, f.page); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				c2, _ := threadCPU()
				if _, err := conv.ConvertString(f.body, converter.WithDomain(habrRoot)); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				c3, _ := threadCPU()
				parse, extract, convert = parse+t1.Sub(t0), extract+t2.Sub(t1), convert+t3.Sub(t2)
				extractCPU, convertCPU = extractCPU+c2-c1, convertCPU+c3-c2
			}
		}
		n := float64(b.N * len(pages))
		ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / n }
		b.ReportMetric(ms(extract), "extract-ms/page")
		b.ReportMetric(ms(parse), "parse-ms/page")
		b.ReportMetric(ms(convert), "convert-ms/page")
		// Extract over the bare conversion: all of it, and without what a
		// whole-page parse would cost.
		b.ReportMetric(100*float64(extract-convert)/float64(convert), "overhead-%")
		b.ReportMetric(100*float64(extract-parse-convert)/float64(convert), "own-%")
		if cpuOK && convertCPU > 0 {
			b.ReportMetric(100*float64(extractCPU-convertCPU)/float64(convertCPU), "overhead-cpu-%")
		}
	}
	for i, p := range articlePages {
		b.Run(strings.TrimSuffix(p.file, ".html"), func(b *testing.B) { run(b, all[i:i+1]) })
	}
	// Every page in each iteration: the CPU time of extracting this mix of
	// layouts and sizes against converting their bodies.
	b.Run("all-pages", func(b *testing.B) { run(b, all) })
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
