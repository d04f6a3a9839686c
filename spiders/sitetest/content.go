package sitetest

import (
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Article is an article page of the site as a correct crawl scrapes it.
type Article struct {
	// ID is the article number (1 is the oldest).
	ID int
	// URL is the path of the article page, e.g. /article/notes-on-quiet-queues-17.
	URL string
	// Title is the headline as text (entities decoded).
	Title string
	// Author is the author's display name.
	Author string
	// Date is the publication date, YYYY-MM-DD.
	Date string
}

// author is a writer of the site: slug (/author/<slug>) and display name.
type author struct{ slug, name string }

var authors = []author{
	{"mara-quinn", "Mara Quinn"}, {"theo-okafor", "Theo Okafor"}, {"lin-park", "Lin Park"},
	{"sam-oneill", "Sam O'Neill"}, {"rosa-diaz", "Rosa Díaz"}, {"jonas-berg", "Jonas Berg"},
	{"amara-nwosu", "Amara Nwosu"}, {"kenji-mori", "Kenji Mori"}, {"ines-costa", "Inês Costa"},
	{"noah-klein", "Noah Klein"},
}

var tags = []string{"go", "redis", "crawling", "databases", "networking", "testing",
	"performance", "security", "design", "operations", "streams", "parsing"}

var (
	titleA = []string{"Notes on", "Why We Rewrote", "A Field Guide to", "Lessons from",
		"The Case for", "Debugging", "Measuring", "Rethinking", "Ten Years of", "Scaling"}
	titleB = []string{"Quiet", "Slow", "Distributed", "Broken", "Lazy", "Tiny", "Honest",
		"Noisy", "Careful", "Boring"}
	titleC = []string{"Queues", "Caches", "Crawlers", "Parsers", "Timeouts", "Retries",
		"Indexes", "Logs", "Schedulers", "Locks & Leases", "Clocks", "Backpressure"}
	words = strings.Fields(`the a this our every system request queue worker message
		stream retry timeout cache index page link crawler server client network latency
		throughput memory disk batch lock lease clock failure test bug fix change deploy
		metric log trace budget limit window shard replica leader follower consumer group
		with for and of in on by to from under over before after during without through
		fast slow small large simple careful quiet honest boring stable fragile hidden
		we they it you measured found fixed broke learned shipped replaced removed kept
		always never often rarely quickly slowly finally eventually`)
)

// content is the generated content of a site.
type content struct {
	n        int      // articles
	months   int      // archive months, from January 2012
	titles   []string // escaped titles, by id
	rawTitle []string // titles as text, by id
	urls     []string // /article/<slug>, by id
	month    []int    // month index, by id
	dates    []string // YYYY-MM-DD, by id
	author   []int    // author index, by id
	tagsOf   [][2]int // two tag indexes, by id
	byMonth  [][]int  // ids, by month
	byAuthor [][]int  // ids, by author
	byTag    [][]int  // ids, by tag
	byDate   [][]int  // top search results by date, by tag
	byTitle  [][]int  // top search results by title, by tag
	paras    []string // body paragraphs
}

const (
	perPage   = 20 // entries per listing page
	bodyParas = 7
	nParas    = 96
	maxPages  = 500000
	minPages  = 60
	latest    = 10 // articles on the home page
	searchTop = 10 // results on a search page
)

func monthsFor(n int) int { return min(120, max(1, n/25)) }

func newContent(pages int) *content {
	pages = min(max(pages, minPages), maxPages)
	lo, hi := 1, pages
	for lo < hi { // largest article count whose site has at most pages URLs
		mid := (lo + hi + 1) / 2
		if estimate(mid) <= pages {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return build(lo)
}

// estimate returns the number of reachable URLs of a site with n articles.
func estimate(n int) int {
	c := layout(n)
	listing := func(groups [][]int) int {
		t := 0
		for _, g := range groups {
			t += pagesOf(len(g))
		}
		return t
	}
	// home, about, articles, listings, searches, 404, 500s, drafts, feed
	return 2 + n + listing(c.byMonth) + listing(c.byAuthor) + listing(c.byTag) + 2*len(tags) + 1 + 2 + 1 + 1
}

func pagesOf(entries int) int { return max(1, (entries+perPage-1)/perPage) }

// layout assigns months, authors and tags to n articles.
func layout(n int) *content {
	c := &content{n: n, months: monthsFor(n)}
	c.month = make([]int, n+1)
	c.author = make([]int, n+1)
	c.tagsOf = make([][2]int, n+1)
	c.byMonth = make([][]int, c.months)
	c.byAuthor = make([][]int, len(authors))
	c.byTag = make([][]int, len(tags))
	for id := 1; id <= n; id++ {
		m := (id - 1) * c.months / n
		a := sitekit.Pick(id, 1, len(authors))
		t1 := sitekit.Pick(id, 2, len(tags))
		t2 := (t1 + 1 + sitekit.Pick(id, 3, len(tags)-1)) % len(tags)
		c.month[id], c.author[id], c.tagsOf[id] = m, a, [2]int{t1, t2}
		c.byMonth[m] = append(c.byMonth[m], id)
		c.byAuthor[a] = append(c.byAuthor[a], id)
		c.byTag[t1] = append(c.byTag[t1], id)
		c.byTag[t2] = append(c.byTag[t2], id)
	}
	return c
}

func build(n int) *content {
	c := layout(n)
	c.titles = make([]string, n+1)
	c.rawTitle = make([]string, n+1)
	c.urls = make([]string, n+1)
	c.dates = make([]string, n+1)
	for id := 1; id <= n; id++ {
		t := titleA[sitekit.Pick(id, 4, len(titleA))] + " " + titleB[sitekit.Pick(id, 5, len(titleB))] + " " + titleC[sitekit.Pick(id, 6, len(titleC))]
		c.rawTitle[id] = t
		c.titles[id] = html.EscapeString(t)
		c.urls[id] = "/article/" + slug(t) + "-" + itoa(id)
		y, mo := c.yearMonth(c.month[id])
		c.dates[id] = fmt.Sprintf("%04d-%02d-%02d", y, mo, 1+sitekit.Pick(id, 7, 28))
	}
	for _, ids := range c.byTag {
		top := make([]int, 0, searchTop)
		for i := len(ids) - 1; i >= 0 && len(top) < searchTop; i-- {
			top = append(top, ids[i])
		}
		c.byDate = append(c.byDate, top)
		all := append([]int(nil), ids...)
		sort.SliceStable(all, func(i, j int) bool { return c.rawTitle[all[i]] < c.rawTitle[all[j]] })
		c.byTitle = append(c.byTitle, all[:min(searchTop, len(all))])
	}
	r := &sitekit.Rand{State: 7}
	for i := 0; i < nParas; i++ {
		c.paras = append(c.paras, r.Sentences(words, 3+r.Intn(4), 7, 16))
	}
	return c
}

// yearMonth returns the year and month (1-12) of month index m.
func (c *content) yearMonth(m int) (int, int) { return 2012 + m/12, m%12 + 1 }

// archivePath returns /archive/<yyyy>/<mm> of month index m.
func (c *content) archivePath(m int) string {
	y, mo := c.yearMonth(m)
	return fmt.Sprintf("/archive/%04d/%02d", y, mo)
}

// slug lower-cases s and joins its words with dashes, dropping other characters.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// article returns the record of article id.
func (c *content) article(id int) Article {
	return Article{ID: id, URL: c.urls[id], Title: c.rawTitle[id], Author: authors[c.author[id]].name, Date: c.dates[id]}
}
