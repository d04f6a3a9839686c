package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// benchFlags are the bench options shared by the bench commands: which per-host
// settings the spider keeps and where pprof profiles go.
type benchFlags struct {
	perHost    bool
	pageSize   int
	cpuProfile string
	memProfile string
	settings   []string
}

func (b *benchFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&b.perHost, "per-host", false, "keep the default per-host settings (leases, host queues) instead of lifting the per-host limit")
	cmd.Flags().IntVar(&b.pageSize, "page-size", 0, "pad the demo shop's pages to about this many bytes (0: as they are, 9-20 KB)")
	cmd.Flags().StringVar(&b.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the crawl to this file")
	cmd.Flags().StringVar(&b.memProfile, "memprofile", "", "write a pprof allocation profile of the crawl to this file")
	cmd.Flags().StringArrayVar(&b.settings, "set", nil, "add a setting to the bench spider's settings, as KEY=VALUE (e.g. response_compression=off; repeatable)")
}

// settingsYAML is the --set settings as lines of the spider's settings block.
func (b *benchFlags) settingsYAML() string {
	var s strings.Builder
	for _, kv := range b.settings {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&s, "  %s: %s\n", strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return s.String()
}

// siteArgs are the demo-site arguments for the page size asked for.
func (b *benchFlags) siteArgs() []string {
	if b.pageSize <= 0 {
		return nil
	}
	return []string{"--page-size", strconv.Itoa(b.pageSize)}
}

// start begins the profiles asked for and returns the function that ends them and
// writes them out.
func (b *benchFlags) start() (func() error, error) {
	var cpu *os.File
	if b.cpuProfile != "" {
		f, err := os.Create(b.cpuProfile)
		if err != nil {
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
		cpu = f
	}
	if b.memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		if b.memProfile != "" {
			f, err := os.Create(b.memProfile)
			if err != nil {
				return fmt.Errorf("bench: memory profile: %w", err)
			}
			errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("bench: profiles: %w", err)
		}
		return nil
	}, nil
}
