package jssite

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// shell writes the empty page the app fills: / (the home), /p/<id> and /status.
func (s *Site) shell(w http.ResponseWriter, path string) {
	extra := ""
	if path == "/status" {
		forbidden := "127.0.0.1:9"
		if f := s.forbidden.Load(); f != nil {
			forbidden = *f
		}
		extra = fmt.Sprintf(`<script>
for (const u of ["http://%s/latest/meta-data/", "http://169.254.169.254/latest/meta-data/iam/security-credentials/"]) {
  fetch(u).then(r => r.text()).then(t => { const p = document.createElement("pre"); p.className = "leak"; p.textContent = t; document.body.appendChild(p); }).catch(() => {});
}
</script>`, forbidden)
	}
	html(w, `<!doctype html><html><head><meta charset="utf-8"><title>JS shop</title><script src="/app.js" defer></script></head>
<body><div id="app"></div><img src="/img.png" alt="">`+extra+`</body></html>`)
}

// categoryPage writes a category's shell: the app fills it from the API.
func (s *Site) categoryPage(w http.ResponseWriter, c int) {
	html(w, `<!doctype html><html><head><meta charset="utf-8"><title>Category `+strconv.Itoa(c)+
		`</title><script src="/app.js" defer></script></head><body><h1>Category `+strconv.Itoa(c)+
		`</h1><ul id="list"></ul><div id="app"></div></body></html>`)
}

// guide writes a guide: plain HTML, no script needed.
func (s *Site) guide(w http.ResponseWriter, g int) {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>Guide %d</title></head><body>
<article class="guide" data-slug="guide-%d"><h1>%s</h1><p>%s</p>`, g, g, s.guideTitle(g), strings.Repeat("Read this carefully. ", 1+g%5))
	if g < s.guides {
		fmt.Fprintf(&b, `<a href="/guide/%d">next guide</a> `, g+1)
	}
	fmt.Fprintf(&b, `<a href="/brand/%d">brand</a></article></body></html>`, (g-1)%s.brands+1)
	html(w, b.String())
}

// brand writes a brand page: plain HTML linking a product through /go/ (a script
// redirect) and the next brand.
func (s *Site) brand(w http.ResponseWriter, n int) {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>Brand %d</title></head><body><div class="brand"><h1>Brand %d</h1>`, n, n)
	c := (n-1)%s.categories + 1
	if in := s.inCategory(c); (n-1)/s.categories < min(PerPage, len(in)) {
		fmt.Fprintf(&b, `<a href="/go/%d">featured</a> `, in[(n-1)/s.categories])
	}
	if n < s.brands {
		fmt.Fprintf(&b, `<a href="/brand/%d">next brand</a>`, n+1)
	}
	b.WriteString(`</div></body></html>`)
	html(w, b.String())
}

// api answers the app's JSON calls.
func (s *Site) api(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api/")
	var v any
	switch {
	case p == "categories":
		var cats []map[string]any
		for c := 1; c <= s.categories; c++ {
			cats = append(cats, map[string]any{"slug": slug(c), "name": "Category " + strconv.Itoa(c)})
		}
		var brands []int
		for n := 1; n <= s.brands; n++ {
			brands = append(brands, n)
		}
		v = map[string]any{"categories": cats, "brands": brands}
	case strings.HasPrefix(p, "c/"):
		c, ok := s.categoryOf("/" + p)
		page, pok := sitekit.Number(r.URL.Query().Get("page"))
		if !ok || !pok {
			http.NotFound(w, r)
			return
		}
		in := s.inCategory(c)
		var list []map[string]any
		for _, i := range in[min(len(in), (page-1)*PerPage):min(len(in), page*PerPage)] {
			list = append(list, map[string]any{"id": i, "name": name(i)})
		}
		v = map[string]any{"products": list, "next": page*PerPage < len(in)}
	case strings.HasPrefix(p, "p/"):
		i, ok := sitekit.Number(strings.TrimPrefix(p, "p/"))
		if !ok || i > s.products {
			http.NotFound(w, r)
			return
		}
		v = map[string]any{"id": i, "name": name(i), "price": price(i), "sku": sku(i), "category": slug(s.category(i)), "guide": s.guideOf(i)}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client hung up
}

// appJS is the single-page app of /, /c/<slug> and /p/<id>.
const appJS = `(function () {
  const app = document.getElementById("app");
  const path = location.pathname;
  function link(href, text, cls) {
    const a = document.createElement("a");
    a.href = href; a.textContent = text; if (cls) a.className = cls;
    return a;
  }
  function route() {
    // Links are routed in the page (pushState), as single-page apps do.
    document.addEventListener("click", e => {
      const a = e.target.closest("a[data-route]");
      if (!a) return;
      e.preventDefault();
      history.pushState(null, "", a.href);
    });
  }
  if (path === "/") {
    route();
    fetch("/api/categories").then(r => r.json()).then(d => {
      const nav = document.createElement("nav");
      for (const c of d.categories) { const a = link("/c/" + c.slug, c.name, "category"); a.dataset.route = ""; nav.appendChild(a); }
      for (const b of d.brands) { nav.appendChild(link("/brand/" + b, "Brand " + b, "brand")); }
      nav.appendChild(link("/status", "status"));
      app.appendChild(nav);
    });
    return;
  }
  const cat = path.match(/^\/c\/([a-z0-9-]+)$/);
  if (cat) {
    const list = document.getElementById("list");
    let page = Number(new URLSearchParams(location.search).get("page") || "1");
    let loading = false, done = false;
    const more = () => {
      if (loading || done) return;
      loading = true;
      const n = page;
      fetch("/api/c/" + cat[1] + "?page=" + n).then(r => r.json()).then(d => {
        for (const p of d.products || []) {
          const li = document.createElement("li");
          li.style.height = "400px";
          li.appendChild(link("/p/" + p.id, p.name, "product-link"));
          list.appendChild(li);
        }
        if (n > 1) history.pushState(null, "", "/c/" + cat[1] + "?page=" + n);
        done = !d.next; page = n + 1; loading = false;
      });
    };
    more();
    window.addEventListener("scroll", () => {
      if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 50) more();
    });
    return;
  }
  const prod = path.match(/^\/p\/(\d+)$/);
  if (prod) {
    fetch("/api/p/" + prod[1]).then(r => r.json()).then(p => {
      document.title = p.name;
      const div = document.createElement("div");
      div.className = "product"; div.dataset.sku = p.sku;
      div.innerHTML = '<h1 class="name"></h1><span class="price"></span> <span class="sku"></span>';
      div.querySelector(".name").textContent = p.name;
      div.querySelector(".price").textContent = p.price;
      div.querySelector(".sku").textContent = p.sku;
      div.appendChild(link("/guide/" + p.guide, "care guide"));
      div.appendChild(link("/c/" + p.category, "more like this"));
      app.appendChild(div);
    });
  }
})();
`
