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

// docsBlock returns the lines of the sh block docs/spiders-go.md holds between its
// name:begin and name:end markers.
func docsBlock(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "spiders-go.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + name + ":begin -->\n```sh\n(.*?)```\n<!-- " + name + ":end -->").FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/spiders-go.md has no sh block between <!-- %s:begin --> and <!-- %[1]s:end -->", name)
	}
	return strings.Split(strings.TrimSpace(string(m[1])), "\n")
}

// goEnv is the environment of the go commands the docs' routes run here: offline (the
// module cache has what this repository needs), and outside any workspace unless the
// route makes one.
func goEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"GOPROXY=off", "GOWORK=off"}, extra...)...)
}

// runIn runs name with args in dir under env, failing t with its output when it fails.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}

// buildModule makes a module of its own that requires this one the way
// docs/spiders-go.md says, from dir, a directory outside the repository: the page's
// mkdir and go mod edit lines run by sh with STREAMCRAWL the repository's absolute path,
// as for a clone anywhere. It puts one main package in it per entry of mains (directory
// in the module: source of its main.go), runs go mod tidy and one go build of them all,
// and returns the binaries by directory.
func buildModule(t *testing.T, dir string, mains map[string]string) map[string]string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var route []string
	for _, line := range docsBlock(t, "clone-route") {
		if strings.HasPrefix(line, "mkdir ") || strings.HasPrefix(line, "go mod edit ") {
			route = append(route, line)
		}
	}
	if len(route) != 2 {
		t.Fatalf("the clone route of docs/spiders-go.md has %d mkdir and go mod edit lines, want one of each: %q", len(route), route)
	}
	runIn(t, dir, goEnv("STREAMCRAWL="+root, "GOFLAGS=-mod=mod"), "sh", "-e", "-c", strings.Join(route, "\n"))
	mod := filepath.Join(dir, "goshop")
	// Offline, go mod tidy takes the sums from here; a user's comes from the proxy.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"go.sum": sum}
	bins := map[string]string{}
	pkgs := []string{}
	for sub, src := range mains {
		files[filepath.Join(sub, "main.go")] = []byte(src)
		name := "goshop"
		if sub != "" {
			name = filepath.Base(sub)
		}
		bins[sub] = filepath.Join(mod, "bin", name)
		pkgs = append(pkgs, "./"+sub)
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the docs' program: %v", err)
	}
	// Both programs in one go build: the packages are loaded once and linked side by side.
	runIn(t, mod, goEnv("GOFLAGS=-mod=mod"), goBin, "mod", "tidy")
	runIn(t, mod, goEnv("GOFLAGS=-mod=mod"), goBin, append([]string{"build", "-o", filepath.Join(mod, "bin") + "/"}, pkgs...)...)
	return bins
}

// TestDocsWorkspaceRoute builds the docs' program the other way docs/spiders-go.md
// gives, from a directory outside the repository: go mod init, then the page's go work
// init line with STREAMCRAWL the clone's absolute path, and go build without go mod
// tidy.
func TestDocsWorkspaceRoute(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "spiders-go.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile("`(go work init [^`]*)`").FindSubmatch(b)
	if line == nil {
		t.Fatal("docs/spiders-go.md gives no `go work init ...` line")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(readmeProgram(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The workspace the route makes, whatever the test's environment says (GOWORK=off,
	// a -mod flag that workspace mode refuses).
	env := append(os.Environ(), "GOPROXY=off", "STREAMCRAWL="+root, "GOWORK="+filepath.Join(mod, "go.work"), "GOFLAGS=-buildvcs=false")
	runIn(t, mod, env, "go", "mod", "init", "example.com/goshop")
	runIn(t, mod, env, "sh", "-e", "-c", string(line[1]))
	runIn(t, mod, env, "go", "build", "-o", filepath.Join(mod, "goshop"), ".")
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
	runProgram := func(bin, dir string) (stdout, stderr string, err error) {
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
	stdout, stderr, err := runProgram(bin, dir)
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
	stdout, stderr, err = runProgram(bins["guarded"], dir2)
	want := "goshop: handlers: crawl goshop fetched no page: every request was dropped: 1 blocked by the network guard " +
		"(loopback/private address blocked: set AllowPrivateNetworks / allow_networks"
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("without AllowNetworks: %v, stderr %q; want a non-zero exit and %q", err, stderr, want)
	}
}
