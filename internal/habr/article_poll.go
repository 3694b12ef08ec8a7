package habr

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// Polls follow the article's text: the legacy site's voting form (div.default_block_polling: a
// title, radio or checkbox labels, a footer with the totals) after the body container, and the
// Vue site's results (div.tm-article-poll since 2019: a header, per answer its percentage, label
// and votes, and the totals), after the body container on m.habr.com and inside it, after the
// formatted text, since 2021. Each is kept as text where it stands (one after the body container
// follows the body): the question in bold, the answers as a GFM task list with their votes where
// the page shows them, and the totals. A poll inside the body container is replaced by that
// text before the cleanup, so that its results view, whose parts stand side by side without
// white space ("25%до $5012"), never reaches the converter.

var (
	pollBlocks      = css(".tm-article-poll, .default_block_polling")
	pollQuestion    = css(".tm-article-poll__header, .tm-article-poll__title, .default-block__polling-title")
	pollAnswers     = css(".tm-article-poll__answer, .content-list__item_polling")
	pollAnswerLabel = css(".tm-article-poll__answer-label, .radio__label_poll, .checkbox__label, label")
	pollVotes       = css(".tm-article-poll__answer-votes")
	pollPercent     = css(".tm-article-poll__answer-percent")
	pollTotals      = css(".tm-article-poll__stats, .default-block__footer_polling")
	// pollParts are what of a poll is not its totals: the totals line is looked for outside them
	// when no element of pollTotals holds it.
	pollParts = css(".tm-article-poll__header, .tm-article-poll__title, .default-block__polling-title, " +
		".tm-article-poll__answer, .content-list__item_polling")
)

// unread are the elements whose text is no part of a poll's totals: a legacy poll's answers and
// footer stand inside its form, so a form is read, its controls are not.
var unread = map[string]bool{"script": true, "style": true, "noscript": true, "template": true,
	"button": true, "input": true, "textarea": true, "select": true}

// totalsLine matches the sentences of a poll's totals as Habr words them in Russian and English
// ("Проголосовали 142 пользователя.", "Воздержался 1 пользователь.", "742 users voted.", "175
// users abstained."), whatever element the layout puts them in.
var totalsLine = regexp.MustCompile(`(?i)(проголосовал|воздержал|всего голос|\bvoted\b|\babstained\b|total votes)`)

// pollMarkers are the class names of the poll blocks, less their common end "poll": the fast
// path declines a page that shows a poll right after its article, where it does not look.
var pollMarkers = [][]byte{[]byte("tm-article-"), []byte("default_block_")}

// poll is one poll as the page shows it.
type poll struct {
	block    *html.Node // where the page shows it
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
			block:    b.Nodes[0],
			question: squash(b.FindMatcher(goquery.SingleMatcher(pollQuestion)).Text()),
			totals:   partsText(b.FindMatcher(goquery.SingleMatcher(pollTotals))),
		}
		if p.totals == "" {
			p.totals = totalsText(b)
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

// partsText is the text of s with its child elements' texts apart: the Vue site writes the
// totals as spans ("Проголосовали 48 пользователей.", "Воздержались 5 пользователей.") that
// stand side by side, with or without white space between them.
func partsText(s *goquery.Selection) string {
	var parts []string
	for _, n := range s.Nodes {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if t := squash(textOf(c)); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, " ")
}

// totalsText finds the totals of a poll whose layout keeps them in an element pollTotals does
// not know: the texts of the block that word a total, outside its question, answers and form
// controls, in page order; an element whose children word two or more totals is read child by
// child, as partsText reads the known ones (the sentences may stand without white space).
func totalsText(block *goquery.Selection) string {
	skip := map[*html.Node]bool{}
	for _, n := range block.FindMatcher(pollParts).Nodes {
		skip[n] = true
	}
	// text is n's text less the parts skipped.
	var text func(n *html.Node) string
	text = func(n *html.Node) string {
		switch {
		case n.Type == html.TextNode:
			return n.Data
		case n.Type != html.ElementNode || skip[n] || unread[n.Data]:
			return ""
		}
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.WriteString(text(c))
		}
		return b.String()
	}
	var parts []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			t := squash(text(c))
			if !totalsLine.MatchString(t) {
				continue
			}
			totals := 0 // child elements that word a total by themselves
			for cc := c.FirstChild; cc != nil; cc = cc.NextSibling {
				if cc.Type == html.ElementNode && totalsLine.MatchString(text(cc)) {
					totals++
				}
			}
			if totals > 1 {
				walk(c)
				continue
			}
			parts = append(parts, t)
		}
	}
	walk(block.Nodes[0])
	return strings.Join(parts, " ")
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

// taskBox is the element that starts a poll answer's list item; renderTaskBox writes it as the
// unchecked box of a GFM task item, "[ ] ", which the converter leaves unescaped as it is
// markup, not text.
const taskBox = "ingest-task"

func renderTaskBox(_ converter.Context, w converter.Writer, _ *html.Node) converter.RenderStatus {
	w.WriteString("[ ] ")
	return converter.RenderSuccess
}

// placePolls puts the polls shown inside the body container in its place, as the HTML of
// pollNodes, and returns the others, which follow the body.
func placePolls(body *html.Node, polls []poll) (after []poll) {
	for _, p := range polls {
		if p.block == nil || p.block.Parent == nil || !contains(body, p.block) {
			after = append(after, p)
			continue
		}
		for _, n := range pollNodes([]poll{p}) {
			p.block.Parent.InsertBefore(n, p.block)
		}
		p.block.Parent.RemoveChild(p.block)
	}
	return after
}

// contains reports whether n is inside (or is) root.
func contains(root, n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == root {
			return true
		}
	}
	return false
}

// pollNodes builds the HTML of polls, converted in the body's place or after it: the question
// in bold, the answers as a list of task items, the totals.
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
				li.AppendChild(newElement(taskBox))
				li.AppendChild(textNode(a.text()))
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
