package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// readmeProgram returns the Go program docs/spiders-go.md holds between its
// readme-program markers, without the code fence.
func readmeProgram(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "spiders-go.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-program:begin -->\n```go\n(.*?)```\n<!-- readme-program:end -->").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/spiders-go.md has no program between <!-- readme-program:begin --> and <!-- readme-program:end -->")
	}
	return string(m[1])
}

// buildModule writes a module of its own that requires this one (a replace directive
// points at the repository, as `go mod edit -replace` does for a clone) with one main
// package per entry of mains (directory in the module: source of its main.go), runs go
// mod tidy and one go build of them all, offline (the module cache has what this
// repository needs), and returns the binaries by directory.
func buildModule(t *testing.T, dir string, mains map[string]string) map[string]string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/goshop\n\ngo 1.26\n\nrequire github.com/streamcrawl/streamcrawl v0.0.0\n\n" +
		"replace github.com/streamcrawl/streamcrawl => " + root + "\n"
	files := map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum}
	bins := map[string]string{}
	pkgs := []string{}
	for sub, src := range mains {
		files[filepath.Join(sub, "main.go")] = []byte(src)
		name := "goshop"
		if sub != "" {
			name = filepath.Base(sub)
		}
		bins[sub] = filepath.Join(dir, "bin", name)
		pkgs = append(pkgs, "./"+sub)
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the docs' program: %v", err)
	}
	// Both programs in one go build: the packages are loaded once and linked side by side.
	for _, args := range [][]string{{"mod", "tidy"}, append([]string{"build", "-o", filepath.Join(dir, "bin") + "/"}, pkgs...)} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the docs' program: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return bins
}

// TestDocsProgram builds the Go program of docs/spiders-go.md as a user would, in a module of its
// own, runs it against the demo shop on loopback (SHOP_URL, as the page says) and
// checks that every product is stored once with its name and price. Without its
// AllowNetworks line it fails with the error the page quotes.
func TestDocsProgram(t *testing.T) {
	t.Parallel()
	site := demosite.New(300)
	shop := httptest.NewServer(site)
	defer shop.Close()
	src := readmeProgram(t)
	// The same program without its AllowNetworks line: what the page says it does.
	line := "\t\tSettings: spiders.Settings{AllowNetworks: []string{\"127.0.0.1/32\"}}}"
	if !strings.Contains(src, line) {
		t.Fatalf("the docs' program has no line %q", line)
	}
	guarded := strings.Replace(src, ",\n\t\t// The demo shop listens on loopback", "}\n\t\t// The demo shop listens on loopback", 1)
	guarded = strings.Replace(guarded, line, "", 1)
	dir := t.TempDir()
	bins := buildModule(t, dir, map[string]string{"": src, "guarded": guarded})
	bin := bins[""]
	run := func(bin, dir string) (stdout, stderr string, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SHOP_URL="+shop.URL+"/", "REDIS_URL=")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		return out.String(), errb.String(), err
	}
	stdout, stderr, err := run(bin, dir)
	if err != nil {
		t.Fatalf("the docs' program: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	products := site.Products()
	if want := regexp.MustCompile(`^done=true: \d+ pages fetched, (\d+) products stored in goshop.jsonl\n$`); !want.MatchString(stdout) {
		t.Errorf("stdout %q, want %s", stdout, want)
	}
	f, err := os.Open(filepath.Join(dir, "goshop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it map[string]any
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		url, _ := it["url"].(string)
		if url == "" || got[url] || it["name"] == "" || it["price"] == "" {
			t.Errorf("product %q stored twice or without url, name or price: %v", url, it)
		}
		got[url] = true
	}
	if len(got) != len(products) {
		t.Errorf("stored %d products, the shop has %d", len(got), len(products))
	}

	// Without AllowNetworks: the guard drops the start URL and the program says so.
	dir2 := t.TempDir()
	stdout, stderr, err = run(bins["guarded"], dir2)
	want := "goshop: handlers: crawl goshop fetched no page: every request was dropped: 1 blocked by the network guard " +
		"(loopback/private address blocked: set AllowPrivateNetworks / allow_networks"
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("without AllowNetworks: %v, stderr %q; want a non-zero exit and %q", err, stderr, want)
	}
}
