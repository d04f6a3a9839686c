package demosite

// SetPageSize makes every HTML page of the site other than an error page about n bytes
// long (at least n, less than one filler paragraph more), so that a benchmark can crawl
// pages of a chosen size: a page shorter than n gets description paragraphs, in a
// <section class="more"> before the footer, until it is long enough. Filler has no links
// and no item fields: the site's ground truth (Reachable, Products, ExpectedItems) and
// every link of a page stay the same. n <= 0, the default, serves pages as they are
// (about 9 KB for a category page, 12-20 KB for a product page). It is safe to call while
// the site serves.
func (s *Site) SetPageSize(n int) {
	s.pageSize.Store(int64(max(n, 0)))
}

// footBytes is about the size of what foot writes (origins differ by a few bytes).
func (s *Site) footBytes() int {
	p := &page{Origin: "http://127.0.0.1:8080"}
	s.foot0(p)
	return len(p.B)
}

// pad writes filler paragraphs until the page and its footer reach SetPageSize's size.
func (s *Site) pad(p *page) {
	want := int(s.pageSize.Load())
	if want <= 0 || len(p.B)+s.footLen >= want {
		return
	}
	paras := s.cat.paragraphs
	p.S("<section class=\"more\">\n<h2>More about this</h2>\n")
	for i := len(p.B); len(p.B)+len("</section>\n")+s.footLen < want; i++ {
		p.S("<p>", paras[i%len(paras)], "</p>\n")
	}
	p.S("</section>\n")
}
