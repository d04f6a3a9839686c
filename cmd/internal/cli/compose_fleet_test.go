package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestComposeFleetFile loads compose/docker-compose.fleet.yml with the compose-spec
// loader and checks that it deploys one fleet: every streamcrawl service runs a valid
// command and reaches Redis with the password, the long-running ones wait for Redis;
// a scalable fetch,parse worker and one store worker writing each crawl to its own
// file; the exporter serving every crawl (no --crawl); and one one-shot submit per
// example spider, each a valid spider of compose/spiders with its own name, crawling a
// demo site of the file.
func TestComposeFleetFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(composeDir, "docker-compose.fleet.yml")},
		cli.WithWorkingDirectory(composeDir), cli.WithEnv([]string{"REDIS_PASSWORD=s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load compose file: %v", err)
	}
	// Without a name of its own the project would be "compose", docker-compose.yml's,
	// and share its Redis volume.
	if project.Name != "streamcrawl-fleet" {
		t.Errorf("project name %q, want streamcrawl-fleet", project.Name)
	}
	sites := map[string]bool{} // services running demo-site
	workers := map[string][]string{}
	crawls := map[string]string{} // crawl -> submit service
	for name, s := range project.Services {
		if s.Build == nil || !strings.HasSuffix(s.Build.Dockerfile, "compose/Dockerfile") {
			continue
		}
		c := composeCommand(t, name, s.Command)
		if url := s.Environment["REDIS_URL"]; url == nil || !strings.Contains(*url, ":s3cret@redis:6379") {
			t.Errorf("service %s: REDIS_URL %v lacks the password", name, url)
		}
		if wait := s.Environment[redisWaitEnv]; c.Flags().Lookup("redis-wait") != nil && (wait == nil || *wait != "60s") {
			t.Errorf("service %s: %s %v, want 60s: it would exit if Redis is not answering yet", name, redisWaitEnv, wait)
		}
		switch c.Name() {
		case "demo-site":
			sites[name] = true
		case "worker":
			stages, err := c.Flags().GetStringSlice("stages")
			if err != nil {
				t.Fatal(err)
			}
			workers[name] = stages
			// A worker stops gracefully: every crawl's in-flight work is finished.
			if s.StopGracePeriod == nil || *s.StopGracePeriod < 25e9 {
				t.Errorf("service %s: stop_grace_period %v, want at least 25s (--shutdown-timeout is 20s)", name, s.StopGracePeriod)
			}
		case "exporter":
			if f := c.Flags().Lookup("crawl"); f == nil || f.Changed {
				t.Errorf("service %s: want the exporter of every crawl (no --crawl), got %q", name, s.Command)
			}
		case "submit":
			// A one-shot, retried until Redis answers (submit does not wait for it).
			if s.Restart != "on-failure" {
				t.Errorf("service %s: restart %q, want on-failure", name, s.Restart)
			}
			if len(c.Flags().Args()) != 1 || !strings.HasPrefix(c.Flags().Args()[0], "/spiders/") {
				t.Errorf("service %s: submits %q, want one file of /spiders", name, c.Flags().Args())
				continue
			}
			path := filepath.Join(composeDir, "spiders", strings.TrimPrefix(c.Flags().Args()[0], "/spiders/"))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			sp, _, err := spiders.Parse(path, data)
			if err != nil {
				t.Errorf("service %s: %v", name, err)
				continue
			}
			if other, ok := crawls[sp.Name]; ok {
				t.Errorf("services %s and %s submit the same crawl %s", name, other, sp.Name)
			}
			crawls[sp.Name] = name
			for _, d := range sp.AllowedDomains {
				if _, ok := project.Services[d]; !ok {
					t.Errorf("service %s: crawl %s is allowed %s, which is no service of the file", name, sp.Name, d)
				}
			}
		}
	}
	for _, want := range []string{"redis", "exporter"} {
		if _, ok := project.Services[want]; !ok {
			t.Errorf("no %s service", want)
		}
	}
	if len(sites) == 0 {
		t.Error("no demo-site service")
	}
	if len(crawls) < 2 {
		t.Errorf("submits of %v, want 2 or more example crawls", crawls)
	}
	var fetchParse, store []string
	for name, stages := range workers {
		s := project.Services[name]
		switch {
		case slices.Equal(stages, []string{"fetch", "parse"}):
			fetchParse = append(fetchParse, name)
			if s.Deploy == nil || s.Deploy.Replicas == nil || *s.Deploy.Replicas < 2 {
				t.Errorf("service %s: want deploy.replicas >= 2 (a fleet)", name)
			}
		case slices.Equal(stages, []string{"store"}):
			store = append(store, name)
			if out := strings.Join(s.Command, " "); !strings.Contains(out, "--out /out/{crawl}.jsonl") {
				t.Errorf("service %s: %q, want each crawl's items in /out/{crawl}.jsonl", name, out)
			}
			if s.Deploy == nil || s.Deploy.Replicas == nil || *s.Deploy.Replicas != 1 {
				t.Errorf("service %s: want deploy.replicas 1 (one writer of each JSONL file)", name)
			}
		default:
			t.Errorf("service %s: worker of stages %v, want fetch,parse or store", name, stages)
		}
	}
	if len(fetchParse) != 1 || len(store) != 1 {
		t.Errorf("fetch,parse workers %v, store workers %v: want one service of each", fetchParse, store)
	}
}
