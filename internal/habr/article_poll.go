package habr

import (
	"bytes"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// Polls follow the article body, outside its container: the legacy site's voting form
// (div.default_block_polling: a title, radio or checkbox labels, a footer with the totals) and
// the Vue site's results (div.tm-article-poll since 2019: a header, per answer its label, votes
// and percentage, and the totals). Each is kept, after the body, as text: the question in bold,
// the answers as a GFM task list with their votes where the page shows them, and the totals.

var (
	pollBlocks      = css(".tm-article-poll, .default_block_polling")
	pollQuestion    = css(".tm-article-poll__header, .tm-article-poll__title, .default-block__polling-title")
	pollAnswers     = css(".tm-article-poll__answer, .content-list__item_polling")
	pollAnswerLabel = css(".tm-article-poll__answer-label, .radio__label_poll, .checkbox__label, label")
	pollVotes       = css(".tm-article-poll__answer-votes")
	pollPercent     = css(".tm-article-poll__answer-percent")
	pollTotals      = css(".tm-article-poll__stats, .default-block__footer_polling")
)

// pollMarkers are the class names of the poll blocks, less their common end "poll": the fast
// path declines a page that shows a poll right after its article, where it does not look.
var pollMarkers = [][]byte{[]byte("tm-article-"), []byte("default_block_")}

// poll is one poll as the page shows it.
type poll struct {
	question string
	answers  []pollAnswer
	totals   string
}

type pollAnswer struct {
	label, votes, percent string
}

// readPolls reads the polls in a document, in page order.
func readPolls(in *goquery.Selection) []poll {
	var out []poll
	in.FindMatcher(pollBlocks).Each(func(_ int, b *goquery.Selection) {
		p := poll{
			question: squash(b.FindMatcher(goquery.SingleMatcher(pollQuestion)).Text()),
			totals:   squash(b.FindMatcher(goquery.SingleMatcher(pollTotals)).Text()),
		}
		b.FindMatcher(pollAnswers).Each(func(_ int, a *goquery.Selection) {
			label := squash(a.FindMatcher(goquery.SingleMatcher(pollAnswerLabel)).Text())
			if label == "" {
				label = squash(a.Text())
			}
			if label == "" {
				return
			}
			p.answers = append(p.answers, pollAnswer{
				label:   label,
				votes:   squash(a.FindMatcher(goquery.SingleMatcher(pollVotes)).Text()),
				percent: squash(a.FindMatcher(goquery.SingleMatcher(pollPercent)).Text()),
			})
		})
		if p.question != "" || len(p.answers) > 0 {
			out = append(out, p)
		}
	})
	return out
}

// pollsStart is the element convert puts between the body and its polls; the converter writes
// it as pollsMark on a line of its own.
const (
	pollsStart = "ingest-polls"
	pollsMark  = "\uE001"
)

func renderPollsStart(_ converter.Context, w converter.Writer, _ *html.Node) converter.RenderStatus {
	w.WriteString("\n\n" + pollsMark + "\n\n")
	return converter.RenderSuccess
}

// pollAnswerMark starts the text of a poll answer's list item; the converter writes it as
// "- \uE000…", which taskItems turns into an unchecked GFM task item.
const pollAnswerMark = "\uE000"

// pollNodes builds the HTML of polls, to be converted after the body: the question in bold,
// the answers as a list, the totals.
func pollNodes(polls []poll) []*html.Node {
	var out []*html.Node
	for _, p := range polls {
		if p.question != "" {
			para, strong := newElement("p"), newElement("strong")
			strong.AppendChild(textNode(p.question))
			para.AppendChild(strong)
			out = append(out, para)
		}
		if len(p.answers) > 0 {
			ul := newElement("ul")
			for _, a := range p.answers {
				li := newElement("li")
				li.AppendChild(textNode(pollAnswerMark + a.text()))
				ul.AppendChild(li)
			}
			out = append(out, ul)
		}
		if p.totals != "" {
			para := newElement("p")
			para.AppendChild(textNode(p.totals))
			out = append(out, para)
		}
	}
	return out
}

// taskItems turns the poll answers' list items into unchecked task items.
func taskItems(md []byte) []byte {
	return bytes.ReplaceAll(md, []byte("- "+pollAnswerMark), []byte("- [ ] "))
}

// text is an answer as a reader sees it: "label — 513 (69.1%)".
func (a pollAnswer) text() string {
	var count []string
	if a.votes != "" {
		count = append(count, a.votes)
	}
	if a.percent != "" {
		count = append(count, "("+a.percent+")")
	}
	if len(count) == 0 {
		return a.label
	}
	return a.label + " — " + strings.Join(count, " ")
}

func textNode(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }

// pollAfter reports whether after, the page after its article (see afterArticle), shows a
// poll. One scan for "poll", whose hits are few, then a look at what precedes each.
func pollAfter(after []byte) bool {
	for from := 0; ; {
		i := bytes.Index(after[from:], []byte("poll"))
		if i < 0 {
			return false
		}
		i += from
		for _, m := range pollMarkers {
			if bytes.HasSuffix(after[:i], m) {
				return true
			}
		}
		from = i + 4
	}
}
