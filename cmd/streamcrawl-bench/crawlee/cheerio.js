// Crawlee's CheerioCrawler on streamcrawl's demo shop (spiders/demosite), for
// `streamcrawl-bench bench-peers`: one Node process, in-memory storage, robots.txt
// obeyed, every a[href] on the same host name followed, the same four item fields
// (url, name, price, sku) from each product page written as JSON lines, and as many
// requests in flight as the per-host limit (the site is one host). It prints one JSON
// line: pages, items, failed. Install with `npm install crawlee@3.18.1` in a directory
// of your choice and run it with NODE_PATH pointing at its node_modules (bench-peers does).
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { CheerioCrawler, Configuration, log } from 'crawlee';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    'per-host': { type: 'string', default: '8' },
    out: { type: 'string', default: 'crawlee-items.jsonl' },
  },
});
log.setLevel(log.LEVELS.WARNING);

const out = createWriteStream(opt.out);
const conc = Number(opt['per-host']);
let pages = 0;
let items = 0;
const text = ($, sel) => $(sel).first().text().trim();

const crawler = new CheerioCrawler({
  minConcurrency: conc,
  maxConcurrency: conc,
  respectRobotsTxtFile: true,
  useSessionPool: false,
  persistCookiesPerSession: false,
  maxRequestRetries: 3,
  async requestHandler({ $, enqueueLinks }) {
    pages++;
    if ($('div.product').length > 0) {
      items++;
      out.write(JSON.stringify({
        url: ($('link[rel=canonical]').first().attr('href') || '').trim(),
        name: text($, '.product-name'),
        price: text($, '.price'),
        sku: text($, '.sku'),
      }) + '\n');
    }
    await enqueueLinks({ selector: 'a[href]', strategy: 'same-hostname' });
  },
}, new Configuration({ persistStorage: false }));

const stats = await crawler.run([opt.url]);
out.end();
console.log(JSON.stringify({ pages, items, failed: stats.requestsFailed }));
