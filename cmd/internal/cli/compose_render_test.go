package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
)

// TestComposeRenderFile loads compose/docker-compose.render.yml over the main file
// with the compose-spec loader: its services run valid streamcrawl commands on the
// rendering spider, reach Redis with the password, and the fetch workers are built
// from the Dockerfile's render target, which installs Debian's chromium, with room in
// /dev/shm and browser flags that parse.
func TestComposeRenderFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(composeDir, "docker-compose.yml"), filepath.Join(composeDir, "docker-compose.render.yml")},
		cli.WithName("streamcrawl"), cli.WithWorkingDirectory(composeDir), cli.WithEnv([]string{"REDIS_PASSWORD=s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load compose files: %v", err)
	}
	for _, name := range []string{"seed-render", "fetch-render", "parse-render", "store-render"} {
		s, ok := project.Services[name]
		if !ok {
			t.Errorf("no %s service", name)
			continue
		}
		c := composeCommand(t, name, s.Command)
		if !strings.Contains(strings.Join(s.Command, " "), "/spiders/shop-render.yaml") {
			t.Errorf("service %s: command %q does not crawl shop-render.yaml", name, s.Command)
		}
		if url := s.Environment["REDIS_URL"]; url == nil || !strings.Contains(*url, ":s3cret@redis:6379") {
			t.Errorf("service %s: REDIS_URL %v lacks the password", name, url)
		}
		if name != "fetch-render" {
			continue
		}
		if s.Build == nil || s.Build.Target != "render" || s.ShmSize < 512<<20 {
			t.Errorf("fetch-render: build %+v, shm_size %d: want the render target and at least 512 MB of /dev/shm", s.Build, s.ShmSize)
		}
		if f := c.Flags().Lookup("browser-tabs"); f == nil || f.Value.String() != "4" {
			t.Errorf("fetch-render: --browser-tabs %v", f)
		}
	}
	df, err := os.ReadFile(filepath.Join(composeDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?s)FROM \S+ AS render\s.*apt-get install[^\n]*chromium`).Match(df) {
		t.Error("the Dockerfile has no render stage installing chromium")
	}
	if last := strings.LastIndex(string(df), "FROM "); strings.Contains(string(df)[last:], "chromium") {
		t.Error("the Dockerfile's default (last) stage installs chromium: the plain image would carry a browser")
	}
}
