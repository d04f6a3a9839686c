package cli

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/redis/go-redis/v9"
)

// TestComposeSentinelFile loads compose/docker-compose.yml with the Sentinel override
// (docker-compose.sentinel.yml) as `docker compose -f ... -f ...` would, and checks the
// Sentinel deployment: a replica of the primary, 3 sentinels monitoring it with quorum 2
// and its password, both data nodes able to authenticate to each other after a failover,
// and every streamcrawl service reaching Redis through a Sentinel URL naming the 3
// sentinels, the monitored name and the password.
func TestComposeSentinelFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(composeDir, "docker-compose.yml"), filepath.Join(composeDir, "docker-compose.sentinel.yml")},
		cli.WithName("streamcrawl"), cli.WithWorkingDirectory(composeDir), cli.WithEnv([]string{"REDIS_PASSWORD=s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load compose files: %v", err)
	}
	for _, node := range []string{"redis", "redis-replica"} {
		cmd := strings.Join(project.Services[node].Command, " ")
		for _, want := range []string{"--requirepass s3cret", "--masterauth s3cret", "--maxmemory-policy noeviction", "--appendonly yes"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s command %q lacks %q", node, cmd, want)
			}
		}
	}
	if cmd := strings.Join(project.Services["redis-replica"].Command, " "); !strings.Contains(cmd, "--replicaof redis 6379") {
		t.Errorf("redis-replica command %q is no replica of redis", cmd)
	}
	var sentinels []string
	for name, s := range project.Services {
		script := strings.Join(s.Command, " ")
		if !strings.Contains(script, "--sentinel") {
			continue
		}
		sentinels = append(sentinels, name+":26379")
		for _, want := range []string{"sentinel monitor mymaster redis 6379 2", "sentinel auth-pass mymaster %s", `"$REDIS_PASSWORD"`, "--port 26379"} {
			if !strings.Contains(script, want) {
				t.Errorf("sentinel %s: command %q lacks %q", name, script, want)
			}
		}
		if pw := s.Environment["REDIS_PASSWORD"]; pw == nil || *pw != "s3cret" {
			t.Errorf("sentinel %s: REDIS_PASSWORD %v, want the deployment's", name, pw)
		}
	}
	slices.Sort(sentinels)
	if len(sentinels) != 3 {
		t.Fatalf("sentinels %v, want 3", sentinels)
	}
	users := 0
	for name, s := range project.Services {
		if s.Build == nil || !strings.HasSuffix(s.Build.Dockerfile, "compose/Dockerfile") || name == "site" {
			continue
		}
		users++
		raw := s.Environment["REDIS_URL"]
		if raw == nil {
			t.Errorf("service %s: no REDIS_URL", name)
			continue
		}
		opt, err := redis.ParseFailoverURL(*raw)
		if err != nil {
			t.Errorf("service %s: REDIS_URL %q is no Sentinel URL: %v", name, *raw, err)
			continue
		}
		addrs := slices.Sorted(slices.Values(opt.SentinelAddrs))
		if opt.MasterName != "mymaster" || !slices.Equal(addrs, sentinels) || opt.Password != "s3cret" {
			t.Errorf("service %s: REDIS_URL names master %q, sentinels %v, password %q; want mymaster, %v, the deployment's",
				name, opt.MasterName, addrs, opt.Password, sentinels)
		}
		for _, a := range addrs {
			if host, _, _ := net.SplitHostPort(a); project.Services[host].Name == "" {
				t.Errorf("service %s: sentinel %s is no compose service", name, a)
			}
		}
	}
	if users < 6 {
		t.Errorf("%d streamcrawl services use Redis, want seed, fetch, parse, store, process and dashboard", users)
	}
}
