package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
)

const composeDir = "../../../compose"

// composeCommand parses a service's command with the real command tree and returns the
// command it runs (its flags parsed into it).
func composeCommand(t *testing.T, service string, args []string) *cobra.Command {
	t.Helper()
	root := (&App{}).rootCommand()
	c, rest, err := root.Find(args)
	if err != nil || c == root {
		t.Fatalf("service %s: command %q is no streamcrawl command: %v", service, args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("service %s: command %q: %v", service, args, err)
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		t.Fatalf("service %s: command %q: %v", service, args, err)
	}
	return c
}

// TestComposeFile loads compose/docker-compose.yml with the compose-spec loader and
// checks that it deploys what the README says: every streamcrawl service runs a valid
// command, Redis keeps its data safely behind a password, Prometheus scrapes a metrics
// port of every service, and Grafana's dashboard asks for metrics that exist.
func TestComposeFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(composeDir, "docker-compose.yml")},
		cli.WithName("streamcrawl"), cli.WithWorkingDirectory(composeDir), cli.WithEnv([]string{"REDIS_PASSWORD=s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load compose file: %v", err)
	}

	// Every service built from our Dockerfile runs a valid streamcrawl command, reaches
	// Redis with the password, and finds the files it names in its volumes.
	metricsPort := map[string]string{} // service -> port its metrics are on
	for name, s := range project.Services {
		if s.Build == nil || !strings.HasSuffix(s.Build.Dockerfile, "compose/Dockerfile") {
			continue
		}
		c := composeCommand(t, name, s.Command)
		for _, flag := range []string{"metrics-addr", "addr"} {
			if f := c.Flags().Lookup(flag); f != nil && f.Value.String() != "" && (flag == "metrics-addr" || c.Name() == "dashboard") {
				_, port, err := net.SplitHostPort(f.Value.String())
				if err != nil {
					t.Errorf("service %s: --%s %q: %v", name, flag, f.Value, err)
				}
				metricsPort[name] = port
			}
		}
		if url := s.Environment["REDIS_URL"]; url == nil || !strings.Contains(*url, ":s3cret@redis:6379") {
			t.Errorf("service %s: REDIS_URL %v lacks the password", name, url)
		}
		// A service started with Redis waits for it to answer (depends_on does not).
		if wait := s.Environment[redisWaitEnv]; c.Flags().Lookup("redis-wait") != nil && (wait == nil || *wait != "60s") {
			t.Errorf("service %s: %s %v, want 60s: it would exit if Redis is not answering yet", name, redisWaitEnv, wait)
		}
		for _, arg := range s.Command {
			if !strings.HasPrefix(arg, "/spiders/") {
				continue
			}
			if _, err := os.Stat(filepath.Join(composeDir, "spiders", strings.TrimPrefix(arg, "/spiders/"))); err != nil {
				t.Errorf("service %s: %s is not in compose/spiders: %v", name, arg, err)
			}
		}
	}
	for _, name := range []string{"fetch", "parse", "store", "process", "dashboard", "seed", "site"} {
		if _, ok := project.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
	for name, min := range map[string]int{"fetch": 2, "parse": 2, "store": 1} {
		if s := project.Services[name]; s.Deploy == nil || s.Deploy.Replicas == nil || *s.Deploy.Replicas < min {
			t.Errorf("service %s: want deploy.replicas >= %d", name, min)
		}
	}

	// Redis: AOF every second, no eviction, a password, a volume.
	redisCmd := strings.Join(project.Services["redis"].Command, " ")
	for _, want := range []string{"--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction", "--requirepass s3cret"} {
		if !strings.Contains(redisCmd, want) {
			t.Errorf("redis command %q lacks %q", redisCmd, want)
		}
	}
	if v := project.Services["redis"].Volumes; len(v) == 0 || v[0].Type != types.VolumeTypeVolume || v[0].Target != "/data" {
		t.Errorf("redis volumes %+v: want a named volume on /data", v)
	}

	// Prometheus scrapes every long-running streamcrawl service, on its metrics port.
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err := os.ReadFile(filepath.Join(composeDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	scraped := map[string]bool{}
	check := func(job, host, port string) {
		if _, ok := project.Services[host]; !ok {
			t.Errorf("prometheus job %s scrapes %s, not a compose service", job, host)
			return
		}
		if metricsPort[host] != port {
			t.Errorf("prometheus job %s scrapes %s:%s, but its metrics port is %q", job, host, port, metricsPort[host])
		}
		scraped[host] = true
	}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, _ := net.SplitHostPort(target)
				check(sc.JobName, host, port)
			}
		}
		for _, d := range sc.DNSSDConfigs {
			for _, n := range d.Names {
				check(sc.JobName, n, itoa64(int64(d.Port)))
			}
		}
	}
	for name := range metricsPort {
		if !scraped[name] {
			t.Errorf("service %s serves metrics but Prometheus does not scrape it", name)
		}
	}
	for _, name := range []string{"fetch", "parse", "store", "process", "dashboard"} {
		if metricsPort[name] == "" {
			t.Errorf("service %s serves no metrics", name)
		}
	}

	// Grafana: provisioned from the files in compose/grafana, asking for metrics that exist.
	var mounts []string
	for _, v := range project.Services["grafana"].Volumes {
		mounts = append(mounts, v.Target)
	}
	for _, want := range []string{"/etc/grafana/provisioning", "/var/lib/grafana/dashboards"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("grafana mounts %v, want %s", mounts, want)
		}
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err = os.ReadFile(filepath.Join(composeDir, "grafana/dashboards/streamcrawl.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana dashboard: %v", err)
	}
	known := metrics.Names()
	nameRE := regexp.MustCompile(`\b(?:streamcrawl|process|go)_[a-z_]+\b`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range nameRE.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
				if !slices.Contains(known, base) && !slices.Contains(known, n) {
					t.Errorf("panel %q asks for %s, which no streamcrawl process exports", p.Title, n)
				}
			}
		}
	}
	if len(dash.Panels) < 10 {
		t.Errorf("grafana dashboard has %d panels", len(dash.Panels))
	}
}
