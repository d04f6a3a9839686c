package fetch

import (
	"context"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// adaptive decides, per page type, whether render: auto pages need a browser.
type adaptive struct {
	f *Fetcher
}

// tripFor returns the round trip of a render: auto request.
func (a *adaptive) tripFor(_ context.Context, _ *spiders.Request) (roundTripper, error) {
	return a.f.browser, nil
}
