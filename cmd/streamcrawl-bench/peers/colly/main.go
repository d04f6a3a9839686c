// Command colly crawls the demo shop with Colly v2, as streamcrawl-bench bench-peers
// compares it with streamcrawl: one process, Async, the per-host limit as a LimitRule's
// Parallelism, robots.txt obeyed, every a[href] on the site followed and the demo
// shop's four item fields scraped from each product page into a JSON-lines file. The
// visited set and the cookies live in Redis (redisStorage, written like
// gocolly/redisstorage: one key per visited request ID), as a crawl that must survive a
// restart keeps them. It prints one JSON line: pages, items, errors.
//
// It is its own Go module so that streamcrawl's go.mod does not depend on Colly.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocolly/colly/v2"
	"github.com/redis/go-redis/v9"
)

type item struct {
	URL   string `json:"url"`
	Name  string `json:"name"`
	Price string `json:"price"`
	SKU   string `json:"sku"`
}

func main() {
	start := flag.String("url", "", "the demo shop's base URL, e.g. http://127.0.0.1:8080/")
	perHost := flag.Int("per-host", 8, "requests in flight to the host at most (LimitRule Parallelism)")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis for the visited set and cookies")
	prefix := flag.String("prefix", "colly", "prefix of the Redis keys")
	out := flag.String("out", "colly-items.jsonl", "items file (JSON lines)")
	flag.Parse()
	if err := run(*start, *perHost, *redisURL, *prefix, *out); err != nil {
		fmt.Fprintln(os.Stderr, "colly:", err)
		os.Exit(1)
	}
}

func run(start string, perHost int, redisURL, prefix, out string) error {
	base, err := url.Parse(start)
	if err != nil || base.Host == "" {
		return fmt.Errorf("--url %q: want http://host:port/", start)
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	st := &redisStorage{rdb: rdb, prefix: prefix}

	c := colly.NewCollector(colly.Async(true), colly.AllowedDomains(base.Hostname()))
	c.IgnoreRobotsTxt = false
	if err := c.SetStorage(st); err != nil {
		return err
	}
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: perHost}); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var mu sync.Mutex
	var pages, items, errs atomic.Int64

	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		_ = e.Request.Visit(e.Attr("href")) // already visited, disallowed or off-site: skipped
	})
	c.OnHTML("div.product", func(e *colly.HTMLElement) {
		doc := e.DOM.Parents().Last()
		it := item{
			URL:   strings.TrimSpace(doc.Find("link[rel=canonical]").First().AttrOr("href", "")),
			Name:  strings.TrimSpace(doc.Find(".product-name").First().Text()),
			Price: strings.TrimSpace(doc.Find(".price").First().Text()),
			SKU:   strings.TrimSpace(doc.Find(".sku").First().Text()),
		}
		b, _ := json.Marshal(it)
		mu.Lock()
		_, _ = w.Write(append(b, '\n'))
		mu.Unlock()
		items.Add(1)
	})
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(*colly.Response, error) { errs.Add(1) })

	if err := c.Visit(start); err != nil {
		return err
	}
	c.Wait()
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("{\"pages\":%d,\"items\":%d,\"errors\":%d}\n", pages.Load(), items.Load(), errs.Load())
	return nil
}

// redisStorage is Colly's storage.Storage in Redis, the way gocolly/redisstorage keeps
// it: a key per visited request ID (SET prefix:request:ID 1, GET to check) and a key per
// host with its cookies.
type redisStorage struct {
	rdb    *redis.Client
	prefix string
	mu     sync.Mutex // one SetCookies at a time, like redisstorage
}

func (s *redisStorage) Init() error { return s.rdb.Ping(context.Background()).Err() }

func (s *redisStorage) Visited(id uint64) error {
	return s.rdb.Set(context.Background(), s.prefix+":request:"+fmt.Sprint(id), "1", 0).Err()
}

func (s *redisStorage) IsVisited(id uint64) (bool, error) {
	_, err := s.rdb.Get(context.Background(), s.prefix+":request:"+fmt.Sprint(id)).Result()
	if err == redis.Nil {
		return false, nil
	}
	return err == nil, err
}

func (s *redisStorage) Cookies(u *url.URL) string {
	v, err := s.rdb.Get(context.Background(), s.prefix+":cookie:"+u.Host).Result()
	if err != nil {
		return ""
	}
	return v
}

// SetCookies stores the host's whole cookie list (Colly's jar has merged it with what
// Cookies returned).
func (s *redisStorage) SetCookies(u *url.URL, cookies string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.rdb.Set(context.Background(), s.prefix+":cookie:"+u.Host, cookies, 0).Err()
}
