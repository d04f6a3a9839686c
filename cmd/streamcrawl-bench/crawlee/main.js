// Crawlee's PuppeteerCrawler on streamcrawl's JavaScript test site (spiders/jssite),
// doing what the site's YAML spider does with render: true, for
// `streamcrawl-bench bench-render --crawlee`: the same page rules (categories scrolled
// until they stop growing, products waited for, the rest until the network is idle),
// images, fonts and media blocked, the same items (written as JSON lines, once per
// key), the same concurrency (browsers x tabs, held fixed), browsers retired after the
// same number of pages. It prints one JSON line: pages, items, failed.
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { Configuration, PuppeteerCrawler, log, puppeteerUtils } from 'crawlee';
import puppeteer from 'puppeteer-core';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    browsers: { type: 'string', default: '1' },
    tabs: { type: 'string', default: '4' },
    'retire-after': { type: 'string', default: '100' },
    out: { type: 'string', default: 'items.jsonl' },
  },
});
log.setLevel(log.LEVELS.WARNING);

const base = new URL(opt.url);
const origin = base.origin;
const rules = ['/c/', '/(p|go)/', '/guide/', '/brand/', '/status$'].map((r) => new RegExp('^' + origin.replace(/[.]/g, '\\.') + r));
const idle = { idleTime: 250, timeout: 10000 };
const out = createWriteStream(opt.out);
const seen = new Set();
let pages = 0;
let items = 0;

const tabs = Number(opt.tabs);
const concurrency = Number(opt.browsers) * tabs;
const crawler = new PuppeteerCrawler({
  launchContext: {
    launcher: puppeteer,
    useChrome: false,
    launchOptions: {
      executablePath: opt.chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    },
  },
  browserPoolOptions: { maxOpenPagesPerBrowser: tabs, retireBrowserAfterPageCount: Number(opt['retire-after']), useFingerprints: false },
  minConcurrency: concurrency,
  maxConcurrency: concurrency,
  useSessionPool: false,
  persistCookiesPerSession: false,
  maxRequestRetries: 3,
  navigationTimeoutSecs: 20,
  requestHandlerTimeoutSecs: 40,
  preNavigationHooks: [async ({ page }) => {
    await page.setRequestInterception(true);
    page.on('request', (r) => (['image', 'font', 'media'].includes(r.resourceType()) ? r.abort() : r.continue()));
  }],
  async requestHandler({ page, request, enqueueLinks }) {
    const path = new URL(request.url).pathname;
    if (path.startsWith('/c/')) {
      await page.waitForSelector('#list li');
      // Crawlee's own infinite scroll: until no new content for a second.
      await puppeteerUtils.infiniteScroll(page, { waitForSecs: 1, timeoutSecs: 30 });
    } else if (/^\/(p|go)\//.test(path)) {
      await page.waitForSelector('.product');
    } else {
      await page.waitForNetworkIdle(idle).catch(() => {});
    }
    const found = await page.evaluate(() => {
      const text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent.replace(/\s+/g, ' ').trim() : undefined; };
      const got = [];
      if (document.querySelector('.product')) got.push({ _type: 'product', sku: text('.product .sku'), name: text('.product .name'), price: text('.product .price') });
      const g = document.querySelector('.guide');
      if (g) got.push({ _type: 'guide', slug: g.getAttribute('data-slug'), title: text('.guide h1') });
      return got;
    });
    for (const it of found) {
      const key = it._type + '|' + (it.sku || it.slug);
      if (seen.has(key)) continue;
      seen.add(key);
      items++;
      out.write(JSON.stringify({ ...it, _url: page.url() }) + '\n');
    }
    await enqueueLinks({ selector: 'a[href]', regexps: rules });
    pages++;
  },
}, new Configuration({ persistStorage: false }));

const stats = await crawler.run([base.href]);
out.end();
console.log(JSON.stringify({ pages, items, failed: stats.requestsFailed }));
